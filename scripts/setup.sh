#!/usr/bin/env bash
# Create .venv and install dpscale into it with the given extras (default: web).
#   scripts/setup.sh            # the web app and the CLI
#   scripts/setup.sh dev        # everything the tests need (torch 2.13.0 CPU first)
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-web}"
python="${PYTHON:-python3}"

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "dpscale needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
    exit 1
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
# This machine's pip configuration names local indexes that may be absent: keep their noise out.
exec 2> >(grep --line-buffered -v "^WARNING: Location 'file://" >&2)
if [[ "$extras" == *dev* || "$extras" == *measure* ]]; then
    # Pin the CPU build first: an unpinned torch would pull a multi-GB CUDA build.
    .venv/bin/python -c 'import torch' 2>/dev/null || "${pip[@]}" "torch==2.13.0"
fi
"${pip[@]}" -e ".[$extras]"
