#!/usr/bin/env bash
# Set everything up (Python packages, Chromium, PostgreSQL) and run every check and test.
# Arguments go to pytest (for example: ./test.sh tests/test_calc.py -k worked).
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh dev
scripts/system-deps.sh
source scripts/postgres.sh   # starts a throw-away server; exports DPSCALE_TEST_POSTGRES_URL

.venv/bin/ruff check src tests benchmarks
.venv/bin/ruff format --check src tests benchmarks
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
