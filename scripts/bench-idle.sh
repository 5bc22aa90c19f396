#!/usr/bin/env bash
# Benchmarks a warm mount after idle: `grep -rn` over a tree through a
# mount (watch on, opens off), warm, then again after IDLE seconds, with
# the FUSE requests each sent (from /metrics on the control socket) and
# native beside it. Needs root and /dev/fuse.
# Usage: scripts/bench-idle.sh TREE [IDLE_SECONDS]   (default 65)
#
# Idle reclaims the backing tree's pages as well as the mount's, and the
# first command after it reads them again for the next: so native after
# idle is timed after an idle of its own, and the mount after another,
# each paying for its own reads; the mount is warmed again before its
# idle, so that its pages have been idle as long as native's. DROP=1
# drops the page cache (drop_caches=1: clean unmapped pages, what
# proactive reclaim takes) instead of waiting, a repeatable stand-in for
# a reclaiming host. EVICT=1 drops only the pages of every file, through
# the mount and in the backing tree (FADV_DONTNEED), and waits 31 s: the
# names and listings stay, as after a reclaim that took pages alone;
# EVICT=0.15 drops those of a random 15% of the files, each side drawn
# apart. LISTINGS=1 with EVICT also drops the kernel's cached listing of
# every directory of the mount (FADV_DONTNEED on it), which is what an
# idle here takes most (docs/BENCHMARKS.md, "After idle"); native's
# directories have no such cache to drop. RESIDENT=1 times nothing after the mount's idle: it says how much
# of the small files' pages stayed, through the mount and in the backing
# tree (fincore), what the host's reclaim took (its walk of the mount
# lists again what the kernel lost, so it cannot precede a timed run).
# FLOOR=1 mounts scripts/fusefloor (the tree copied into memory, served
# with no admission) instead of fsguard: what the refill costs in FUSE
# requests alone (no request counts then). BIN=path measures another
# fsguard build.
set -euo pipefail
cd "$(dirname "$0")/.."
tree=$(realpath "${1:?usage: scripts/bench-idle.sh TREE [IDLE_SECONDS]}")
idle=${2:-65}
. scripts/benchlib.sh
bench_work idle
if [ "${FLOOR:-0}" = 1 ]; then
  go build -o "$work/fusefloor" ./scripts/fusefloor
  "$work/fusefloor" "$tree" "$work/mnt" > "$work/ready" 2> "$work/log" &
  daemon=$!
  until grep -q Mounted "$work/ready" 2>/dev/null; do kill -0 "$daemon" || { cat "$work/log" >&2; exit 1; }; sleep 0.1; done
  ops() { echo 0; }
  byop() { :; }
else
  bench_build
  printf '[[root]]\npath = "%s"\n[audit]\nopens = "off"\n' "$tree" > "$work/policy.toml"
  bench_mount --socket "$work/ctl.sock"
  ops() { curl -s --unix-socket "$work/ctl.sock" http://fsguard/metrics | awk '/^fsguard_fuse_op_seconds_count/ {s += $2} END {print s + 0}'; }
  byop() { curl -s --unix-socket "$work/ctl.sock" http://fsguard/metrics | awk '/^fsguard_fuse_op_seconds_count/ {print $1, $2}' | sort; }
fi
timed() { local t0 t1; t0=$(date +%s%N); grep -rn zzqqxx-no-such-text "$1" > /dev/null || true; t1=$(date +%s%N); echo $(( (t1 - t0) / 1000000 )); }
timed "$work/mnt" > /dev/null; timed "$work/mnt" > /dev/null # warm up
echo "native: $(timed "$tree") ms"
o0=$(ops); t=$(timed "$work/mnt"); o1=$(ops)
echo "warm: $t ms, $((o1 - o0)) FUSE requests"
if [ "${DROP:-0}" = 1 ]; then
  what="the page cache dropped"
  idle() { sync; echo 1 > /proc/sys/vm/drop_caches; }
elif [ "${EVICT:-0}" != 0 ]; then
  what="every file's pages dropped"
  [ "$EVICT" = 1 ] || what="the pages of a random $EVICT of the files dropped"
  [ "${LISTINGS:-0}" = 1 ] && what="$what, and the mount's listings"
  idle() {
    python3 - "$EVICT" "${LISTINGS:-0}" "$tree" "$work/mnt" <<'PY'
import os, random, sys
share, listings = float(sys.argv[1]), sys.argv[2] == "1"
for top in sys.argv[3:]:
    dirs = []
    for d, _, files in os.walk(top):
        dirs.append(d)
        for f in files:
            if random.random() >= share:
                continue
            try:
                fd = os.open(os.path.join(d, f), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
    if listings and top == sys.argv[-1]:
        for d in dirs:  # after the walk, which lists each
            fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
PY
    # Past the 5 s after which a READ of given bytes means they were
    # reclaimed, and the 30 s between two rounds of pushes after reclaim
    # (the warm-up after the first idle starts one).
    sleep 31
  }
else
  what="${idle}s idle"
  idle() { sleep "$idle"; }
fi
idle
echo "native after $what: $(timed "$tree") ms"
# Warm the mount again: its pages were last read before the first idle,
# so without this they would have sat idle twice as long as native's.
timed "$work/mnt" > /dev/null; timed "$work/mnt" > /dev/null
idle
if [ "${RESIDENT:-0}" = 1 ]; then
  resident() { # small files (of at most 128 KiB, the pushed ones) under $1, .git left out
    (cd "$1" && find . -path ./.git -prune -o -type f -size -129k -print0 | xargs -0 -r fincore -b -n -o RES,SIZE) |
      awk '{n++; if ($1 < $2) lost++} END {printf "%d of %d small files lost pages\n", lost, n}'
  }
  echo "after $what, through the mount: $(resident "$work/mnt")"
  echo "after $what, in the backing tree: $(resident "$tree")"
  exit 0
fi
byop > "$work/ops0"
o0=$(ops); t=$(timed "$work/mnt"); o1=$(ops)
echo "after $what: $t ms, $((o1 - o0)) FUSE requests:" $(byop | join - "$work/ops0" | awk '$2 > $3 {sub(/.*op="/, "", $1); sub(/".*/, "", $1); printf "%s %d, ", $1, $2 - $3}')
