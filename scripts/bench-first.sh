#!/usr/bin/env bash
# Times one command as the first on a fresh fsguard mount of TREE, RUNS
# times (a new mount each), with native once before each (the backing
# tree page-cached), and prints the FUSE requests each run sent and the
# daemon's time per operation (from /metrics on the control socket). $M
# in the command is the tree's place: natively the tree, then the mount.
# Needs root and /dev/fuse.
#
#   scripts/bench-first.sh TREE 'COMMAND using $M' [RUNS]
#
# Environment: WARM=1 keeps the warm walk (default off: the command alone);
# WARM=after times the command once the walk is done (native just before);
# AUDIT=off (or record) sets [audit] opens;
# OPEN=daemon for mount.open = "daemon" (passthrough); BIN=path measures
# another fsguard binary (an older build) instead of building this tree;
# KEPT=1 starts each mount with the verdicts the one before saved (the
# first run is then the priming one).
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
bench_build
warm=false
case "${WARM:-0}" in 1 | after) warm=true ;; esac
printf '[[root]]\npath = "%s"\n[mount]\nopen = "%s"\nwarm = %s\n' "$tree" "${OPEN:-kernel}" "$warm" > "$work/policy.toml"
[ -n "${AUDIT:-}" ] && printf '[audit]\nopens = "%s"\n' "$AUDIT" >> "$work/policy.toml"
metrics() { curl -s --unix-socket "$work/ctl.sock" http://fsguard/metrics | grep '^fsguard_fuse_op_seconds_\(sum\|count\)' || true; }
timed() { local t0 t1; t0=$(date +%s%N); M=$1 bash -c "$cmd" > /dev/null; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }
for _ in $(seq "$runs"); do
  if [ "${WARM:-0}" = after ]; then
    bench_mount --socket "$work/ctl.sock"
    for _ in $(seq 6000); do grep -q '"msg":"warm walk done"' "$work/log" 2>/dev/null && break; sleep 0.05; done
    native=$(timed "$tree")
  else
    native=$(timed "$tree")
    bench_mount --socket "$work/ctl.sock"
  fi
  metrics > "$work/m0"
  t=$(timed "$work/mnt")
  metrics > "$work/m1"
  bench_stop
  umount -l "$work/mnt" 2>/dev/null || true
  ops=$(join <(sort "$work/m0") <(sort "$work/m1") -a 2 | awk '
    /_count/ { split($1, a, "\""); c[a[2]] = $NF - ($3 == "" ? 0 : $2) }
    /_sum/   { split($1, a, "\""); s[a[2]] = $NF - ($3 == "" ? 0 : $2) }
    END { for (op in c) if (c[op] > 0) printf "%s %d (%.0f ms) ", op, c[op], s[op] * 1000 }')
  echo "native ${native} ms   fsguard ${t} ms   ${ops}"
done
