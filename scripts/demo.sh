#!/usr/bin/env bash
# The whole fsguard story on one machine, without Docker: a policy, the
# daemon with its control socket, an "agent" reading through the mount with
# fsguard read and grep, a denial, a stale write refused, and the
# operator's journal query. Needs root and /dev/fuse. Exits non-zero if any
# step does not behave as shown.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/fsguard-demo.XXXXXX)
bin=$work/fsguard
go build -o "$bin" ./cmd/fsguard
chmod 755 "$work"

step() { printf '\n$ %s\n' "$*"; }
expect_fail() { if "$@"; then echo "demo: expected a refusal: $*" >&2; exit 1; fi; }

# The host side: a project with a secret, a policy, the daemon.
mkdir -p "$work/project/src" "$work/workspace"
printf 'package main\n\nfunc main() {\n\tprintln("hello")\n}\n' > "$work/project/src/main.go"
printf 'TOKEN=do-not-show\n' > "$work/project/.env"
cat > "$work/policy.toml" <<TOML
[[root]]
path = "$work/project"

[journal]
path = "$work/journal.db"

[control]
socket = "$work/fsguard.sock"
TOML
"$bin" mount --policy "$work/policy.toml" "$work/workspace" > "$work/ready" 2> "$work/daemon.log" &
daemon=$!
cleanup() { kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; umount -l "$work/workspace" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 100); do grep -q '"msg":"mounted"' "$work/ready" 2>/dev/null && break; sleep 0.1; done
grep -q '"msg":"mounted"' "$work/ready" || { cat "$work/daemon.log"; exit 1; }
echo "# daemon: $(cat "$work/ready")" | sed "s#$work#\$WORK#g"

# The agent side: it sees only the mount and the socket.
export FSGUARD_SOCKET=$work/fsguard.sock FSGUARD_SESSION=demo-agent
cd "$work/workspace"
{
step ls -a /workspace
ls -a

step fsguard read src/main.go --limit 3
"$bin" read src/main.go --limit 3

step grep -rn println .
grep -rn println .

step fsguard read .env
expect_fail "$bin" read .env

step cat .env
expect_fail cat .env

step "echo '// edited by someone else' >> $work/project/src/main.go   # (on the host)"
echo '// edited by someone else' >> "$work/project/src/main.go"

step "fsguard write src/main.go < new.go"
echo 'package main' > "$work/new.go"
set +e; "$bin" write src/main.go < "$work/new.go"; rc=$?; set -e
echo "(exit status $rc)"
[ "$rc" = 4 ] || { echo "demo: expected FS_STALE_VERSION (exit 4)" >&2; exit 1; }

step fsguard read src/main.go
"$bin" read src/main.go

step "fsguard write src/main.go < new.go"
"$bin" write src/main.go < "$work/new.go"

step "fsguard journal query --session demo-agent     # (the operator, on the host)"
FSGUARD_JOURNAL=$work/journal.db "$bin" journal query --session demo-agent | cut -c1-4,27-

step fsguard journal verify
FSGUARD_JOURNAL=$work/journal.db "$bin" journal verify | sed 's/ ([0-9]* ms)//'
} 2>&1 | sed "s#$work/workspace#/workspace#g; s#$work#\$WORK#g"
cd /
echo
echo "demo: ok"
