#!/usr/bin/env bash
# Headless Chromium and the ChromeDriver of the same build, from Debian's packages, for the web
# page's browser test. Nothing to do when both are installed; without root or apt-get it says
# so and exits non-zero (the browser test then skips with its reason).
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "setup-browser: install Debian's chromium and chromium-driver (needs root and apt-get)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
chromium --version && chromedriver --version
