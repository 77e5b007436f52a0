#!/usr/bin/env bash
# Drift check, NOT part of ./test.sh: run every check and test against the newest releases that
# pyproject.toml's ranges allow (ignoring requirements/), in a separate .venv-latest, so that a
# new numpy or FastAPI breaking us is found on purpose before the lock is refreshed.
# Arguments go to pytest. torch stays at the CPU build 2.13.0 (the only one on this disk).
set -euo pipefail
cd "$(dirname "$0")"
python="${PYTHON:-python3}"
[ -x .venv-latest/bin/python ] || "$python" -m venv .venv-latest
pip=(.venv-latest/bin/python -m pip install --quiet --disable-pip-version-check)
exec 2> >(grep --line-buffered -v "^WARNING: Location 'file://" >&2)
# The constraint keeps torch at 2.13.0: an upgrade would take a multi-GB CUDA build.
"${pip[@]}" --constraint requirements/torch.txt "torch==2.13.0"
"${pip[@]}" --constraint requirements/torch.txt --upgrade --upgrade-strategy eager --editable ".[dev]"
.venv-latest/bin/python -m pip list --format=freeze --disable-pip-version-check \
    | grep -iE '^(numpy|scipy|pydantic|fastapi|starlette|sqlalchemy|matplotlib|babel|typer|lightning|transformers)=='
scripts/system-deps.sh
source scripts/postgres.sh
.venv-latest/bin/ruff check src tests benchmarks
.venv-latest/bin/mypy
.venv-latest/bin/python -m pytest "$@"
