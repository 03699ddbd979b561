#!/bin/sh
# System packages the browser tests and the playground font need:
#   chromium        - the browser Playwright drives (tests/test_web_browser.py)
#   fonts-noto-cjk  - source of the packaged font subset (scripts/make_font_subset.py)
# Idempotent: does nothing (and touches no network) when both are installed.
set -eu

PACKAGES="chromium fonts-noto-cjk"
missing=""
for pkg in $PACKAGES; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $pkg"
    fi
done

if [ -z "$missing" ]; then
    echo "ci_system_deps: already installed: $PACKAGES"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
echo "ci_system_deps: installing:$missing"
$SUDO apt-get update
# shellcheck disable=SC2086  # word splitting of the package list is intended
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends $missing
