#!/usr/bin/env bash
# Benchmarks a warm mount after idle: `grep -rn` over a tree through a
# mount (watch on, opens off), warm, then again after IDLE seconds, with
# the FUSE requests each sent (from /metrics on the control socket) and
# native beside it. Needs root and /dev/fuse.
# Usage: scripts/bench-idle.sh TREE [IDLE_SECONDS]   (default 65)
set -euo pipefail
cd "$(dirname "$0")/.."
tree=$(realpath "${1:?usage: scripts/bench-idle.sh TREE [IDLE_SECONDS]}")
idle=${2:-65}
. scripts/benchlib.sh
bench_work idle
bench_build
printf '[[root]]\npath = "%s"\n[audit]\nopens = "off"\n' "$tree" > "$work/policy.toml"
bench_mount --socket "$work/ctl.sock"
ops() { curl -s --unix-socket "$work/ctl.sock" http://fsguard/metrics | awk '/^fsguard_fuse_op_seconds_count/ {s += $2} END {print s + 0}'; }
timed() { local t0 t1; t0=$(date +%s%N); grep -rn zzqqxx-no-such-text "$1" > /dev/null || true; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }
timed "$work/mnt" > /dev/null; timed "$work/mnt" > /dev/null # warm up
echo "native: $(timed "$tree") ms"
o0=$(ops); t=$(timed "$work/mnt"); o1=$(ops)
echo "warm: $t ms, $((o1 - o0)) FUSE requests"
sleep "$idle"
byop() { curl -s --unix-socket "$work/ctl.sock" http://fsguard/metrics | awk '/^fsguard_fuse_op_seconds_count/ {print $1, $2}' | sort; }
byop > "$work/ops0"
o0=$(ops); t=$(timed "$work/mnt"); o1=$(ops)
echo "after ${idle}s idle: $t ms, $((o1 - o0)) FUSE requests:" $(byop | join - "$work/ops0" | awk '$2 > $3 {sub(/.*op="/, "", $1); sub(/".*/, "", $1); printf "%s %d, ", $1, $2 - $3}')
echo "native after idle: $(timed "$tree") ms"
