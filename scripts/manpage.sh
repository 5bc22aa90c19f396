#!/usr/bin/env bash
# The man page, generated from the help text: fsguard's top-level help
# and each command's own (fsguard help CMD), so the two never disagree.
#   scripts/manpage.sh [BINARY] > fsguard.1
# BINARY defaults to building ./cmd/fsguard, stamped with
# scripts/version.sh as a release is. The version in the header is the
# binary's own (fsguard version). The date is SOURCE_DATE_EPOCH's
# (reproducible builds), else the last commit's.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-}
if [ -z "$bin" ]; then
	bin=$(mktemp -d)/fsguard
	CGO_ENABLED=0 go build -ldflags="-X github.com/fsguard/fsguard/internal/concept/version.stamped=$(bash scripts/version.sh)" -o "$bin" ./cmd/fsguard
fi
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
day=$(date -u -d "@$epoch" +%Y-%m-%d)
version=$("$bin" version | awk '{print $2}')

# roff: a backslash is \e; a line starting with . or ' would be a request.
esc() { sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"; }
block() { echo ".nf"; echo ".RS 4"; esc; echo ".RE"; echo ".fi"; }

cat <<ROFF
.TH FSGUARD 1 "$day" "fsguard $version" "User Commands"
.SH NAME
fsguard \- a guarded read-only view of source trees, and a read tool, for AI coding agents
.SH SYNOPSIS
.B fsguard
.I command
.RI [ flags ]
.SH DESCRIPTION
fsguard mounts a read-only FUSE view of the allowed roots for an agent's
container (denied paths invisible, symbolic links unable to escape, special
files absent, private keys never served), gives the agent a read command
with exact, line-numbered windows, and records every observation in a
durable, tamper-evident journal, so that a write is refused unless the
session saw the current version of the file.
ROFF
echo ".SH COMMANDS"
"$bin" help 2>&1 | block
for c in $("$bin" help 2>&1 | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{exit}'); do
	echo ".SS $c"
	"$bin" help "$c" 2>&1 | block
done
cat <<'ROFF'
.SH ENVIRONMENT
.TP
.B FSGUARD_POLICY
the policy file (default: the current directory as the only root)
.TP
.B FSGUARD_SESSION
the agent's session id, for the journal and write preconditions
.TP
.B FSGUARD_SOCKET
ask the daemon at this control socket instead of reading directly
.TP
.B FSGUARD_JOURNAL
the journal's path
.SH FILES
.TP
.I /etc/fsguard/policy.toml
the policy the packaged service mounts with
.TP
.I /var/lib/fsguard/journal.db
the service's journal (root's default)
.TP
.I /run/fsguard/fsguard.sock
the service's control socket
.SH SEE ALSO
.BR fusermount3 (1),
.BR systemd.service (5)
ROFF
