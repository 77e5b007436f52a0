#!/usr/bin/env bash
# Set everything up (Python packages, Chromium, PostgreSQL) and run every check and test.
# Arguments go to pytest (for example: ./test.sh tests/test_calc.py -k worked).
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh dev
scripts/system-deps.sh
scripts/browser-tools.sh
source scripts/postgres.sh   # starts a throw-away server; exports DPSCALE_TEST_POSTGRES_URL

lint_paths=(src tests)
[ -d benchmarks ] && lint_paths+=(benchmarks)
.venv/bin/ruff check "${lint_paths[@]}"
.venv/bin/ruff format --check "${lint_paths[@]}"
.venv/bin/mypy
.venv/bin/python -m pytest "$@"
