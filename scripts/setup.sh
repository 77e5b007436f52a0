#!/usr/bin/env bash
# Create .venv and install dpscale into it, with the exact versions of requirements/ (hashed):
#   scripts/setup.sh            # the web app and the CLI (requirements/web.txt)
#   scripts/setup.sh dev        # every extra, as the tests need it (requirements/dev.txt)
# Refuses a lock that was not made from this pyproject.toml (scripts/lock.sh refreshes it).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-web}"
python="${PYTHON:-python3}"

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "dpscale needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
    exit 1
fi
source scripts/stage.sh
stage "lock matches pyproject.toml" "$python" scripts/check_lock.py
lock=requirements/dev.txt
[ "$extras" = web ] && lock=requirements/web.txt
pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check)
# This machine's pip configuration names local indexes that may be absent: keep their noise out
# (the stage lines go to the stderr before this filter, fd 3, which holds no partial line back).
exec 3>&2 2> >(grep --line-buffered -v "^WARNING: Location 'file://" >&2)
export STAGE_FD=3
install() {
    [ -x .venv/bin/python ] || "$python" -m venv .venv
    # The lock pins torch 2.13.0+cpu: the CPU build that lies on this disk, never a CUDA download.
    "${pip[@]}" --require-hashes --requirement "$lock"
    "${pip[@]}" --no-deps --editable ".[$extras]"
}
stage "Python packages ($lock)" install
