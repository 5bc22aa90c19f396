#!/usr/bin/env bash
# Installs what the tests use beyond Go and the kernel: the shells whose
# completion TestShellCompletions drives (zsh, fish) and promtool
# (Debian's prometheus package), which checks the daemon's /metrics in
# TestMetricsRiseAndPassPromtool, rsyslog (TestRsyslogShipsEveryRecordOnce),
# PostgreSQL and rsyslog-pgsql (TestFleetAuditInPostgres),
# and the MCP TypeScript SDK that
# TestTypeScriptSDKClient drives (npm ci in tests/tsclient, from its lock
# file; Node.js and npm are on the machine), and what
# scripts/check-release.sh checks the packages with (file, groff, dpkg-deb,
# lintian), and bindfs, the FUSE mirror scripts/benchmount measures fsguard
# against, and strace, whose fault injection (-e inject) the fault tests drive
# (TestWrittenThoughTheDirectorySyncFailed), and qpdf, which attaches files
# to PDFs and encrypts them (TestAttackEncryptedPDFThroughEveryDoor). Idempotent; needs
# root and apt (Debian, Ubuntu). CI runs it; on another machine the tests
# that need a missing tool skip (FSGUARD_REQUIRE_TOOLS=1 makes that fail).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d tests/tsclient/node_modules/@modelcontextprotocol/sdk ]; then
  npm ci --prefix tests/tsclient --no-audit --no-fund > /dev/null
fi
need=()
for tool in zsh fish promtool rsyslogd file groff dpkg-deb lintian bindfs strace qpdf; do
  pkg=$tool
  [ "$tool" = promtool ] && pkg=prometheus
  [ "$tool" = rsyslogd ] && pkg=rsyslog
  [ "$tool" = groff ] && pkg=groff-base
  [ "$tool" = dpkg-deb ] && pkg=dpkg
  command -v "$tool" > /dev/null || need+=("$pkg")
done
# PostgreSQL and rsyslog's output to it: TestFleetAuditInPostgres.
[ -n "$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null)" ] || need+=(postgresql)
[ -n "$(ls /usr/lib/*/rsyslog/ompgsql.so 2>/dev/null)" ] || need+=(rsyslog-pgsql)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get > /dev/null; then
  echo "scripts/deps.sh: missing ${need[*]}; install them (needs root and apt here)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -q --no-install-recommends "${need[@]}" > /dev/null 2>&1 ||
  { apt-get update -q > /dev/null && apt-get install -y -q --no-install-recommends "${need[@]}" > /dev/null; }
