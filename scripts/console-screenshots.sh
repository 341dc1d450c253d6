#!/usr/bin/env bash
# Regenerates docs/console/*.png: the browser test (api/tests/it/console.rs) against a real
# server, saving each page it visits at 1280×800 (and a few 420 px wide, dark). Needs Node,
# `npm ci --prefix console` and Chromium (`apt-get install chromium`).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/console
SCREENSHOTS="$PWD/docs/console" cargo test -p agentlog-api --test it -- --exact console::console_in_a_browser_sqlite
ls -l docs/console
