#!/usr/bin/env bash
# The credential detector beside gitleaks' default rules (as a library), on
# the same text: Go's own sources, and the tree given (e.g. a moby
# checkout). tools/credbench is a module of its own, so the main module
# never depends on gitleaks.
#
#   scripts/bench-creds.sh [TREE]
set -euo pipefail
cd "$(dirname "$0")/../tools/credbench"
CREDBENCH_TREE="${1:-}" go test -run '^$' -bench . -benchtime "${BENCHTIME:-2x}"
