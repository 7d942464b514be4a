#!/usr/bin/env bash
# The Debian packages rcb needs on the machine that runs tests: the one place that lists
# them, used by quickstart.sh and .ci/run. With root (or password-less sudo) it installs
# what is missing; otherwise it prints the exact command and fails.
set -euo pipefail

# bubblewrap: the sandbox for model-written code; python3: runs the papers' tests;
# python3-numpy: the bundled example has a NumPy paper.
PACKAGES=(bubblewrap python3 python3-numpy)
# --test: also what only the test suite needs (kept out of quickstart, whose users need not
# download a browser): chromium, the headless browser that test/e2e/html-report.test.ts
# drives through puppeteer-core to read the rendered HTML report.
TEST_PACKAGES=(chromium)
EXTRA=()
for a in "$@"; do
  if [ "$a" = "--test" ]; then PACKAGES+=("${TEST_PACKAGES[@]}"); else EXTRA+=("$a"); fi   # e.g. python3-torch for the torch benchmark
done

missing=()
for p in "${PACKAGES[@]}" "${EXTRA[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "rcb needs: bwrap (bubblewrap), python3 with numpy. Install them with your system's package manager." >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then SUDO=(); elif sudo -n true 2>/dev/null; then SUDO=(sudo -n); else
  echo "rcb needs these Debian packages: ${missing[*]}" >&2
  echo "install them with:  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "installing ${missing[*]} ..." >&2
"${SUDO[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
