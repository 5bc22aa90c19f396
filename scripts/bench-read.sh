#!/usr/bin/env bash
# Benchmarks fsguard read on a 1 GiB text file beside sha256sum and wc -l,
# in one run on this machine. The file is made once under $TMPDIR.
# Prints the benchmark lines and the ratios of medians.
set -euo pipefail
cd "$(dirname "$0")/.."
count=${COUNT:-5}
out=$(mktemp)
go test -run '^$' -bench 'BenchmarkRead1GiB' -benchtime 1x -count "$count" ./internal/service/read | tee "$out"
median() { grep "^BenchmarkRead1GiB/$1-" "$out" | awk '{print $3}' | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
first=$(median fsguard-first-window); last=$(median fsguard-last-window)
sha=$(median sha256sum); wc=$(median wc); gosha=$(median go-sha256)
awk -v f="$first" -v l="$last" -v s="$sha" -v w="$wc" -v g="$gosha" 'BEGIN {
  printf "medians (ms): fsguard first window %.0f, last window %.0f, Go sha256 alone %.0f, sha256sum %.0f, wc -l %.0f\n", f/1e6, l/1e6, g/1e6, s/1e6, w/1e6
  printf "fsguard first window / Go sha256 alone = %.2f\n", f/g
  printf "fsguard first window / sha256sum = %.2f\n", f/s
  printf "fsguard last window  / sha256sum = %.2f\n", l/s
  printf "fsguard first window / wc -l     = %.2f\n", f/w
}'
rm -f "$out"
