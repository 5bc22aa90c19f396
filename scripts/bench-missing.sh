#!/usr/bin/env bash
# Benchmarks missing-name lookups: 500 stats of names that do not exist (a
# new name each, so no negative entry is cached), in a directory of 3,000
# files, natively and through a fresh fsguard mount, in one run. Needs root
# and /dev/fuse. Usage: scripts/bench-missing.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
work=$(mktemp -d /tmp/fsguard-missing.XXXXXX)
trap 'kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; umount -l "$work/mnt" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/root/d" "$work/mnt"
for i in $(seq 3000); do echo x > "$work/root/d/f$i.txt"; done
go build -o "$work/fsguard" ./cmd/fsguard
printf '[[root]]\npath = "%s"\n' "$work/root" > "$work/policy.toml"
FSGUARD_JOURNAL=$work/journal.db "$work/fsguard" mount --policy "$work/policy.toml" "$work/mnt" > "$work/ready" 2> "$work/log" &
daemon=$!
for _ in $(seq 100); do grep -q '"msg":"mounted"' "$work/ready" 2>/dev/null && break; sleep 0.1; done
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
