#!/usr/bin/env bash
# Install what rcb needs and run the benchmark on the bundled example with the offline
# models (no keys, no cloud). Safe to run again: it installs only what is missing and the
# run resumes from its run directory.
set -euo pipefail
cd "$(dirname "$0")"

major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$major" -lt 20 ]; then
  echo "rcb needs Node.js 20 or later (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi
# --test adds chromium, which `npm test` (the quick start's second command) needs for the
# HTML report test; RCB_NO_TEST_PACKAGES=1 leaves it out for a machine that only runs benchmarks.
if [ "${RCB_NO_TEST_PACKAGES:-}" = "1" ]; then bash scripts/system-packages.sh; else bash scripts/system-packages.sh --test; fi
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then npm ci --no-audit --no-fund; fi
npm run -s build
node dist/bin/rcb.js run --model oracle --model empty "$@"
