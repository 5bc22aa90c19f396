# Sourced by the benchmark scripts (bench-*.sh): one work directory, one
# build of fsguard and one way to mount it, so each script says only what
# it measures. Needs root and /dev/fuse.
#
#   bench_work NAME [BASE]   make $work (under BASE, default /tmp) with
#                            $work/mnt; at exit the daemon is stopped, the
#                            mount detached and $work removed
#   bench_build              build ./cmd/fsguard to $work/fsguard (BIN=path:
#                            copy that build instead, an older one)
#   bench_mount [ARGS...]    mount $work/policy.toml on $work/mnt (ARGS go
#                            to fsguard mount), set $daemon, wait for ready
#   bench_stop               stop the daemon
#   cpu PID                  the process's CPU time so far, in ticks

bench_work() {
  work=$(mktemp -d "${2:-/tmp}/fsguard-$1.XXXXXX")
  daemon=
  trap bench_cleanup EXIT
  mkdir -p "$work/mnt"
}

bench_cleanup() {
  bench_stop
  umount -l "$work/mnt" 2>/dev/null || true
  rm -rf "$work"
}

bench_build() {
  if [ -n "${BIN:-}" ]; then cp "$BIN" "$work/fsguard"; else go build -o "$work/fsguard" ./cmd/fsguard; fi
}

bench_mount() {
  # A first mount ever, unless KEPT=1: then the verdicts the last run saved
  # stay (a restart on a tree seen before; the first run saves them).
  if [ "${KEPT:-0}" = 1 ]; then
    find "$work" -maxdepth 1 -name 'journal.*' ! -name '*.verdicts' -delete
  else
    rm -f "$work"/journal.*
  fi
  FSGUARD_JOURNAL=$work/journal.db "$work/fsguard" mount "$@" --policy "$work/policy.toml" "$work/mnt" > "$work/ready" 2> "$work/log" &
  daemon=$!
  for _ in $(seq 200); do grep -q '"msg":"mounted"' "$work/ready" 2>/dev/null && return; sleep 0.05; done
  echo "mount not ready: $(cat "$work/log")" >&2
  exit 1
}

bench_stop() {
  if [ -n "${daemon:-}" ]; then
    kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
    daemon=
  fi
}

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; } # utime + stime
