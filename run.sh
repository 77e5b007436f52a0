#!/usr/bin/env bash
# Set everything up and start the web app on http://127.0.0.1:8000 (SQLite by default).
# Any arguments go to `dpscale serve` (for example --host 0.0.0.0 --port 8080).
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh web
exec .venv/bin/dpscale serve "$@"
