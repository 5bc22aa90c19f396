#!/usr/bin/env bash
# Times one command as the first on a fresh fsguard mount of TREE, RUNS
# times (a new mount each), with native once before each (the backing
# tree page-cached), and prints the FUSE requests each run sent and the
# daemon's time per operation (from /metrics on the control socket). $M
# in the command is the tree's place: natively the tree, then the mount.
# Needs root and /dev/fuse.
#
# Each run also says where the machine's time went while the command ran
# through the mount: the command's own CPU (its processes' user and
# system time), the daemon's, and how idle the machine was. Their sum
# over the cores is how fast the run could be if nothing ever waited
# ("bound"): a run close to it is short of CPU, one far above it waits
# on round trips.
#
#   scripts/bench-first.sh TREE 'COMMAND using $M' [RUNS]
#
# Environment: WARM=1 keeps the warm walk (default off: the command alone);
# WARM=after times the command once the walk is done (native just before);
# AUDIT=off (or record) sets [audit] opens;
# OPEN=daemon for mount.open = "daemon" (passthrough); BIN=path measures
# another fsguard binary (an older build) instead of building this tree;
# KEPT=1 starts each mount with the verdicts the one before saved (the
# first run is then the priming one); FLOOR=1 mounts scripts/fusefloor
# instead (the tree copied into memory, served with no admission and no
# look-ahead; no request counts then), for its accounting beside fsguard's;
# AS=UID runs the command (natively too) as that user, group the same, no
# other groups, the mount made with --allow-other: an agent that neither is
# root nor owns the files, whose every first look at an inode makes the
# kernel ask the daemon for the file's ACL (GETXATTR).
#
#   scripts/bench-first.sh /tmp/fsguard-bench/data 'dd if=$M/big.bin of=/dev/null bs=1M status=none'
#   scripts/bench-first.sh /tmp/moby 'find $M > /dev/null' 5
set -euo pipefail
cd "$(dirname "$0")/.."
tree=$(realpath "${1:?usage: scripts/bench-first.sh TREE 'COMMAND using \$M' [RUNS]}")
cmd=${2:?usage: scripts/bench-first.sh TREE 'COMMAND using \$M' [RUNS]}
runs=${3:-3}
. scripts/benchlib.sh
bench_work first
server=fsguard
# as runs its arguments as AS, or as this user.
as() { "$@"; }
mountargs=()
if [ -n "${AS:-}" ]; then
  [ "${FLOOR:-0}" = 1 ] && { echo "AS=: the floor mounts for its own user only" >&2; exit 2; }
  as() { setpriv --reuid="$AS" --regid="$AS" --clear-groups "$@"; }
  mountargs=(--allow-other)
  chmod 755 "$work" # mktemp made it 0700: the mount point is inside
fi
if [ "${FLOOR:-0}" = 1 ]; then
  [ "${WARM:-0}" = after ] && { echo "FLOOR=1: the floor has no warm walk to wait for" >&2; exit 2; }
  server=floor
  go build -o "$work/fusefloor" ./scripts/fusefloor
  # mountfirst stands for bench_mount: the floor reads the tree before it
  # serves, and says so on its first line.
  mountfirst() {
    "$work/fusefloor" "$tree" "$work/mnt" > "$work/ready" 2> "$work/log" &
    daemon=$!
    until grep -q Mounted "$work/ready" 2>/dev/null; do kill -0 "$daemon" || { cat "$work/log" >&2; exit 1; }; sleep 0.05; done
  }
else
  bench_build
  mountfirst() { bench_mount --socket "$work/ctl.sock" "${mountargs[@]}"; }
fi
warm=false
case "${WARM:-0}" in 1 | after) warm=true ;; esac
printf '[[root]]\npath = "%s"\n[mount]\nopen = "%s"\nwarm = %s\n' "$tree" "${OPEN:-kernel}" "$warm" > "$work/policy.toml"
[ -n "${AUDIT:-}" ] && printf '[audit]\nopens = "%s"\n' "$AUDIT" >> "$work/policy.toml"
metrics() { [ -S "$work/ctl.sock" ] && curl -s --unix-socket "$work/ctl.sock" http://fsguard/metrics | grep '^fsguard_fuse_op_seconds_\(sum\|count\)' || true; }
timed() { local t0 t1; t0=$(date +%s%N); M=$1 as bash -c "$cmd" > /dev/null; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }
# idle: the machine's idle and iowait ticks so far, over all cores.
idle() { awk '/^cpu / { print $5 + $6 }' /proc/stat; }
# ms: the children's user and system time that bash's `times` printed
# ("0m0.030s 0m0.240s" on its second line), in milliseconds.
ms() { awk 'NR == 2 { t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60000 + a[2] * 1000 } printf "%.0f", t }'; }
# timedcpu is timed through the mount, with the accounting above.
timedcpu() {
  local t0 t1 i0 i1 c0 c1 own
  c0=$(cpu "$daemon"); i0=$(idle); t0=$(date +%s%N)
  own=$(M=$1 as bash -c "{ $cmd
} > /dev/null; times" | ms)
  t1=$(date +%s%N); i1=$(idle); c1=$(cpu "$daemon")
  local wall=$(( (t1 - t0) / 1000000 )) tick=$(( 1000 / $(getconf CLK_TCK) )) cores=$(nproc)
  local dcpu=$(( (c1 - c0) * tick ))
  echo "$wall ms (command cpu $own ms, daemon cpu $dcpu ms, machine idle $(( (i1 - i0) * tick * 100 / (wall * cores + 1) ))%, bound $(( (own + dcpu) / cores )) ms)"
}
for _ in $(seq "$runs"); do
  if [ "${WARM:-0}" = after ]; then
    mountfirst
    for _ in $(seq 6000); do grep -q '"msg":"warm walk done"' "$work/log" 2>/dev/null && break; sleep 0.05; done
    native=$(timed "$tree")
  else
    native=$(timed "$tree")
    mountfirst
  fi
  metrics > "$work/m0"
  t=$(timedcpu "$work/mnt")
  metrics > "$work/m1"
  bench_stop
  umount -l "$work/mnt" 2>/dev/null || true
  ops=$(join <(sort "$work/m0") <(sort "$work/m1") -a 2 | awk '
    /_count/ { split($1, a, "\""); c[a[2]] = $NF - ($3 == "" ? 0 : $2) }
    /_sum/   { split($1, a, "\""); s[a[2]] = $NF - ($3 == "" ? 0 : $2) }
    END { for (op in c) if (c[op] > 0) printf "%s %d (%.0f ms) ", op, c[op], s[op] * 1000 }')
  echo "native ${native} ms   ${server} ${t}   ${ops}"
done
