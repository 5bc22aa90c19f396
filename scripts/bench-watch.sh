#!/usr/bin/env bash
# Benchmarks what the backing-tree watch costs the daemon for writes that
# are not its business: a root on a filesystem shared with other work, and
# 60,000 file operations (create, write, rename, delete) beside it, on the
# same filesystem, with mount.watch = "fanotify", "inotify" and "auto".
# INSIDE=1 makes the operations in the root instead (root/churn): what the
# watch costs per change it must report. BIN=path measures another build.
# Needs root and /dev/fuse.
# Usage: scripts/bench-watch.sh [DIR] [OPS]   (DIR: where to work, default /tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-/tmp}
ops=${2:-60000}
. scripts/benchlib.sh
bench_work watch "$base"
mkdir -p "$work/root/src" "$work/elsewhere" "$work/root/churn"
where=$work/elsewhere what=unrelated
[ "${INSIDE:-0}" = 1 ] && where=$work/root/churn what="in-root"
for i in $(seq 200); do echo "file $i" > "$work/root/src/f$i.txt"; done
bench_build
hz=$(getconf CLK_TCK)
for mode in fanotify inotify auto; do
  printf '[[root]]\npath = "%s"\n[mount]\nwatch = "%s"\n[audit]\nopens = "off"\n' "$work/root" "$mode" > "$work/policy.toml"
  bench_mount
  backend=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["watch"])' "$work/ready")
  c0=$(cpu "$daemon"); t0=$(date +%s%N)
  python3 - "$where" "$ops" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n // 4):
    p = os.path.join(d, f"x{i % 500}.tmp")
    with open(p, "w") as f:
        f.write("unrelated\n")
    os.rename(p, p + ".done")
    os.unlink(p + ".done")
PY
  t1=$(date +%s%N); sleep 1; c1=$(cpu "$daemon")
  printf '%-9s (in use: %-8s) %6d %s operations in %5d ms: daemon CPU %5d ms (%.2f%% of a core)\n' \
    "$mode" "$backend" "$ops" "$what" $(( (t1 - t0) / 1000000 )) $(( (c1 - c0) * 1000 / hz )) \
    "$(python3 -c "print(($c1 - $c0) * 1000 / $hz / (($t1 - $t0) / 1e6 + 1000) * 100)")"
  bench_stop
done
