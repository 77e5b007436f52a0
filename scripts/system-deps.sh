#!/usr/bin/env bash
# System packages the tests and benchmarks use, from Debian: Chromium and a CJK font for the
# browser tests, PostgreSQL for the store tests and wrk for benchmarks/bench_web.py (without it
# the benchmark falls back to a Python client that measures less). Installed only where
# missing; needs root (as CI is) or sudo.
set -euo pipefail
source "$(dirname "$0")/stage.sh"
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v wrk >/dev/null 2>&1 || need+=(wrk)
# Japanese, Chinese and Korean pages need a CJK font, or Chromium draws empty boxes and the
# browser tests measure a layout no visitor sees.
[ -n "$(fc-list :lang=ja 2>/dev/null)" ] || need+=(fonts-noto-cjk)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || need+=(postgresql)
if [ ${#need[@]} -eq 0 ]; then
    echo "setup: Chromium, CJK font, PostgreSQL, wrk: installed already" >&2
    exit 0
fi
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
apt_install() {
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}
stage "installing from Debian: ${need[*]}" apt_install
