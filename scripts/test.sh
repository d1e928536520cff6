#!/usr/bin/env bash
# The test suite (called by `make test` and by CI).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
ruff check src stages flows tests bench
# Two test processes of one torch thread each, a test file to a process, the longest files
# first (tests/conftest.py): on 2 cores 1.5x faster than one process of two threads, whose
# second thread mostly spins (docs/performance-log.md). TEST_WORKERS sets the count.
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# the 30 slowest tests close every run
exec python -m pytest -q --durations=30 -n "${TEST_WORKERS:-2}" --dist loadfile "$@"
