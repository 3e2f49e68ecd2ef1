#!/usr/bin/env bash
# Debian's chromium and chromium-driver for the console's browser tests, when they are missing:
# /usr/bin/chromium and /usr/bin/chromedriver (tests/src/webdriver.rs). As root, or through sudo
# without a password; anything else stops here and says how to install them.
set -euo pipefail
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    exit 0
fi
if [ "$(id -u)" = 0 ]; then
    as_root=()
elif sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
else
    echo "install_browser: the console's browser tests need Debian's chromium and chromium-driver:" >&2
    echo "  sudo apt-get install chromium chromium-driver" >&2
    exit 1
fi
echo "install_browser: apt-get install chromium chromium-driver"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]
