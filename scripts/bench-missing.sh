#!/usr/bin/env bash
# Benchmarks missing-name lookups: 500 stats of names that do not exist (a
# new name each, so no negative entry is cached), in a directory of 3,000
# files, natively and through a fresh fsguard mount, in one run. Needs root
# and /dev/fuse. Usage: scripts/bench-missing.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
. scripts/benchlib.sh
bench_work missing
mkdir -p "$work/root/d"
for i in $(seq 3000); do echo x > "$work/root/d/f$i.txt"; done
bench_build
printf '[[root]]\npath = "%s"\n' "$work/root" > "$work/policy.toml"
bench_mount
ls "$work/mnt/d" > /dev/null
probe='import os, sys, time, random
d, tag = sys.argv[1], random.random()
t = time.perf_counter()
for i in range(500):
    os.path.exists(f"{d}/missing-{tag}-{i}.py")
print(f"{(time.perf_counter()-t)*1000:.1f} ms")'
for _ in $(seq "$runs"); do
  echo "native $(python3 -c "$probe" "$work/root/d")   fsguard $(python3 -c "$probe" "$work/mnt/d")"
done
