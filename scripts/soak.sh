#!/usr/bin/env bash
# The mount load test at full length: 16 concurrent grep -r over the mount
# for 60 s (or $SECONDS_TOTAL) while the backing tree swaps a directory
# with a symlink to outside and a writer edits, replaces, creates and
# deletes files in it, checking each version shows and never reverts.
# CI runs the same test for 5 s.
set -euo pipefail
cd "$(dirname "$0")/.."
FSGUARD_LOAD_SECONDS=${SECONDS_TOTAL:-60} FSGUARD_REQUIRE_FUSE=1 \
  go test -count=1 -timeout 10m -run TestLoadWithSymlinkSwaps -v ./tests
