#!/usr/bin/env bash
# The Debian packages rcb needs on the machine that runs tests: the one place that lists
# them, used by quickstart.sh and .ci/run. With root (or password-less sudo) it installs
# what is missing; otherwise it prints the exact command and fails.
set -euo pipefail

# bubblewrap: the sandbox for model-written code; python3: runs the papers' tests;
# python3-numpy: the bundled example has a NumPy paper.
PACKAGES=(bubblewrap python3 python3-numpy)
# What the tests of the 9 papers of the public pset that run on Debian's Python need
# (`rcb doctor` lists them; npm test runs their oracle). The other 11 need modules Debian
# does not package (timm, jax, hydra, ...): see the recipe with a virtualenv in docs/running-locally.md.
PAPER_PACKAGES=(python3-torch python3-scipy python3-pandas python3-yaml python3-tqdm python3-torchvision python3-omegaconf python3-matplotlib)
# --test: also what only the test suite needs: chromium, the headless browser that
# test/e2e/results.test.ts drives through puppeteer-core to read the rendered HTML report.
# quickstart.sh passes it too, so that its second command (npm test) passes on a fresh
# machine; RCB_NO_TEST_PACKAGES=1 leaves it out there.
TEST_PACKAGES=(chromium)
EXTRA=()
for a in "$@"; do
  if [ "$a" = "--test" ]; then PACKAGES+=("${TEST_PACKAGES[@]}"); else EXTRA+=("$a"); fi   # e.g. python3-torch for the torch benchmark
done

missing=()
for p in "${PACKAGES[@]}" "${PAPER_PACKAGES[@]}" "${EXTRA[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "rcb needs: bwrap (bubblewrap), python3 with numpy. Install them with your system's package manager." >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then SUDO=(); elif sudo -n true 2>/dev/null; then SUDO=(sudo -n); else
  echo "rcb needs these Debian packages: ${missing[*]}" >&2
  echo "install them with:  sudo apt-get -o DPkg::Lock::Timeout=600 update && sudo apt-get -o DPkg::Lock::Timeout=600 install -y ${missing[*]}" >&2
  exit 1
fi
# Another apt (unattended-upgrades on a fresh machine, a second shell) may hold the dpkg
# lock: wait for it, up to RCB_APT_LOCK_TIMEOUT seconds (default 600), instead of failing.
LOCK_WAIT="${RCB_APT_LOCK_TIMEOUT:-600}"
APT=(apt-get -o "DPkg::Lock::Timeout=${LOCK_WAIT}")
echo "installing ${missing[*]} (waiting up to ${LOCK_WAIT}s if another apt holds the dpkg lock) ..." >&2
"${SUDO[@]}" "${APT[@]}" update -qq
DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" "${APT[@]}" install -y -qq "${missing[@]}" >/dev/null
