#!/usr/bin/env bash
# npm packages the browser tests load into the pages: axe-core 4, pinned (the accessibility test).
# Installed into .tools/ (git-ignored), only where missing; without node/npm the tests that
# need them skip, saying so.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/stage.sh
command -v npm >/dev/null 2>&1 || { echo "setup: no npm: the accessibility test will skip" >&2; exit 0; }
[ -f .tools/node_modules/axe-core/axe.min.js ] && { echo "setup: axe-core: installed already" >&2; exit 0; }
mkdir -p .tools
stage "axe-core (npm)" npm install --prefix .tools --no-save --no-audit --no-fund --loglevel=error "axe-core@4.14.1" >/dev/null
