#!/usr/bin/env bash
# The console's built files are what its sources build: install the pinned packages
# (console/package-lock.json), type-check, rebuild console/dist/ and fail when it differs from
# what is checked in. The console's own bundle must stay within 300 KB gzipped.
set -euo pipefail
cd "$(dirname "$0")/../console"

npm ci --no-audit --no-fund
npx tsc --noEmit
node build.mjs
if ! git diff --quiet -- dist || [ -n "$(git ls-files --others --exclude-standard -- dist)" ]; then
    git status --short -- dist >&2
    echo "console/dist differs from its sources: run \`npm ci && node build.mjs\` in console/ and commit dist/" >&2
    exit 1
fi
bytes=$(cat dist/console.js dist/console.css | gzip -9 | wc -c)
limit=$((300 * 1024))
echo "console bundle: $bytes bytes gzipped (limit $limit)"
if [ "$bytes" -gt "$limit" ]; then
    echo "the console's bundle is over 300 KB gzipped" >&2
    exit 1
fi
