#!/usr/bin/env bash
# The test suite (called by `make test` and by CI).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
ruff check src stages flows tests bench
exec python -m pytest -q --durations=30 "$@"  # the 30 slowest tests close every run
