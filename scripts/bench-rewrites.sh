#!/usr/bin/env bash
# Benchmarks what changes inside a root cost the daemon: FILES files in a
# directory the kernel knows (stat'ed through the mount, or listed with
# LISTED=1: then every file has a node and each change is also pushed
# again), each rewritten once a round in the backing tree, with no
# reader, on a fresh mount. Prints the daemon's CPU for the rewrites.
# With BINARY (other fsguard builds), each round mounts each in turn.
# Needs root and /dev/fuse.
# Usage: scripts/bench-rewrites.sh [FILES] [ROUNDS] [BINARY...]
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-3000}
rounds=${2:-5}
shift $(( $# < 2 ? $# : 2 ))
. scripts/benchlib.sh
bench_work rewrites
mkdir -p "$work/root/d"
for i in $(seq "$files"); do echo x > "$work/root/d/f$i.txt"; done
printf '[[root]]\npath = "%s"\n[mount]\nwarm = false\n' "$work/root" > "$work/policy.toml"
bench_build
cp "$work/fsguard" "$work/fsguard.head"
hz=$(getconf CLK_TCK)
for r in $(seq "$rounds"); do
  for bin in "$work/fsguard.head" "$@"; do
    cp "$bin" "$work/fsguard"
    bench_mount
    if [ "${LISTED:-0}" = 1 ]; then ls "$work/mnt/d" > /dev/null; else stat "$work/mnt/d" > /dev/null; fi
    c0=$(cpu "$daemon"); t0=$(date +%s%N)
    for i in $(seq "$files"); do echo "round $r" > "$work/root/d/f$i.txt"; done
    t1=$(date +%s%N)
    # The watch's last batch: wait until the daemon's CPU stops moving.
    c1=$(cpu "$daemon"); sleep 0.5
    while [ "$(cpu "$daemon")" != "$c1" ]; do c1=$(cpu "$daemon"); sleep 0.5; done
    printf '%-40s round %d: %d rewrites in %5d ms, daemon CPU %5d ms\n' "${bin##*/}" "$r" "$files" \
      $(( (t1 - t0) / 1000000 )) $(( (c1 - c0) * 1000 / hz ))
    bench_stop
  done
done
