#!/usr/bin/env bash
# Benchmarks the access audit: `grep -r` over a tree through a fresh
# fsguard mount (cold), again once the daemon is idle (warm), and twice
# back to back (the second timed: it meets the first one's appends), with
# [audit] opens = "record" and with "off", interleaved in one run, plus
# native; then the daemon's CPU time and the journal's growth per 10,000
# recorded opens.
# Needs root and /dev/fuse.
# Usage: scripts/bench-opens.sh [TREE] [RUNS]   (default: 20,000 small files, 5 runs)
set -euo pipefail
cd "$(dirname "$0")/.."
tree=${1:-}
runs=${2:-5}
. scripts/benchlib.sh
bench_work opens
if [ -z "$tree" ]; then
  tree=$work/root
  python3 - "$tree" <<'PY'
import os, sys
root = sys.argv[1]
for i in range(20000):
    d = os.path.join(root, f"d{i % 200:03d}")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"f{i:05d}.txt"), "w") as f:
        f.write(f"line one of {i}\nneedle {i}\n" + "filler text\n" * 20)
PY
fi
tree=$(realpath "$tree")
bench_build
ms() { local t0 t1; t0=$(date +%s%N); "$@" > /dev/null 2>&1 || true; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }
start() { # mode
  printf '[[root]]\npath = "%s"\n[audit]\nopens = "%s"\n' "$tree" "$1" > "$work/policy.toml"
  bench_mount --session bench
}
settle() { # until the daemon used no CPU for a second (its appends done)
  local a b
  for _ in $(seq 120); do
    a=$(cpu "$daemon"); sleep 1; b=$(cpu "$daemon")
    [ "$a" = "$b" ] && return
  done
}
jsize() { du -cb "$work"/journal.db "$work"/journal.db-wal 2>/dev/null | tail -1 | cut -f1; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
: > "$work/results"
hz=$(getconf CLK_TCK)
for r in $(seq "$runs"); do
  echo "native $(ms grep -r needle "$tree")" >> "$work/results"
  for mode in record off; do
    start "$mode"
    c0=$(cpu "$daemon")
    echo "$mode-cold $(ms grep -r needle "$work/mnt")" >> "$work/results"
    settle
    # warm: the daemon idle (the cold run's records appended) ...
    echo "$mode-warm $(ms grep -r needle "$work/mnt")" >> "$work/results"
    # ... and back to back, as an agent's commands come: the second run
    # meets the first one's records being appended.
    settle
    ms grep -r needle "$work/mnt" > /dev/null
    echo "$mode-b2b $(ms grep -r needle "$work/mnt")" >> "$work/results"
    settle
    c1=$(cpu "$daemon")
    if [ "$mode" = record ]; then
      n=$(FSGUARD_JOURNAL=$work/journal.db "$work/fsguard" journal stats --format json | python3 -c 'import json,sys; a=json.load(sys.stdin)["accesses"]; print(sum(v["opens"] for v in a.values()))')
      echo "record-opens $n" >> "$work/results"
      echo "record-journal $(jsize)" >> "$work/results"
    fi
    echo "$mode-cpu-ms $(( (c1 - c0) * 1000 / hz ))" >> "$work/results"
    bench_stop
  done
done
echo "tree: $tree ($(find "$tree" -type f | wc -l) files), runs: $runs, medians:"
for k in native record-cold off-cold record-warm off-warm record-b2b off-b2b record-cpu-ms off-cpu-ms record-opens record-journal; do
  printf '%-16s %s\n' "$k" "$(grep "^$k " "$work/results" | cut -d' ' -f2 | median)"
done
rc=$(grep '^record-cold ' "$work/results" | cut -d' ' -f2 | median); oc=$(grep '^off-cold ' "$work/results" | cut -d' ' -f2 | median)
rw=$(grep '^record-warm ' "$work/results" | cut -d' ' -f2 | median); ow=$(grep '^off-warm ' "$work/results" | cut -d' ' -f2 | median)
rb=$(grep '^record-b2b ' "$work/results" | cut -d' ' -f2 | median); ob=$(grep '^off-b2b ' "$work/results" | cut -d' ' -f2 | median)
rcpu=$(grep '^record-cpu-ms ' "$work/results" | cut -d' ' -f2 | median); ocpu=$(grep '^off-cpu-ms ' "$work/results" | cut -d' ' -f2 | median)
n=$(grep '^record-opens ' "$work/results" | cut -d' ' -f2 | median); js=$(grep '^record-journal ' "$work/results" | cut -d' ' -f2 | median)
python3 -c "
rc,oc,rw,ow,rb,ob,rcpu,ocpu,n,js=map(float,'$rc $oc $rw $ow $rb $ob $rcpu $ocpu $n $js'.split())
print(f'cold record/off: {rc/oc:.2f}x   warm record/off: {rw/ow:.2f}x   back-to-back record/off: {rb/ob:.2f}x')
print(f'per 10k recorded opens: daemon CPU +{(rcpu-ocpu)/n*1e4:.0f} ms, journal +{js/n*1e4/1024:.0f} KiB')"
