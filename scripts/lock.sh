#!/usr/bin/env bash
# Refresh the locks in requirements/ from pyproject.toml (pip-tools' pip-compile, with hashes).
#   scripts/lock.sh              # re-resolve what pyproject.toml changed, keep every other pin
#   scripts/lock.sh --upgrade    # move every pin to the newest release the ranges allow
# dev.txt holds every extra (what ./test.sh installs); web.txt the web app alone (./run.sh),
# resolved from dev.txt's pins so that both install the same versions.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-python3}"
[ -x .venv-lock/bin/pip-compile ] || {
    "$python" -m venv .venv-lock
    .venv-lock/bin/python -m pip install --quiet --disable-pip-version-check "pip-tools==7.6.2"
}
compile=(.venv-lock/bin/pip-compile --quiet --generate-hashes --strip-extras --allow-unsafe
    --no-emit-index-url --no-emit-find-links --no-header
    --constraint requirements/torch.txt "$@")
"${compile[@]}" --all-extras --output-file requirements/dev.txt pyproject.toml
[ -f requirements/web.txt ] || cp requirements/dev.txt requirements/web.txt
"${compile[@]}" --extra web --output-file requirements/web.txt pyproject.toml
.venv-lock/bin/python scripts/check_lock.py --write
