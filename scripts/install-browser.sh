#!/bin/sh
# Installs Debian's Chromium, the browser the tests in tests/browser/ drive headless.
# Idempotent and quiet: does nothing when /usr/bin/chromium exists. Uses sudo only when
# not root. No browser download of its own: the distribution's package, from apt.
set -eu

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install-browser.sh: $CHROMIUM is missing and installing it needs root (no sudo found)." >&2
    echo "  Run as root: apt-get update && apt-get install -y --no-install-recommends chromium" >&2
    exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-browser.sh: $CHROMIUM is missing and this system has no apt-get." >&2
    echo "  Install Chromium with your package manager so that $CHROMIUM exists." >&2
    exit 1
fi

echo "install-browser.sh: installing Debian's chromium package (for tests/browser/) ..."
log=$(mktemp)
if ! { $SUDO apt-get update -q && \
       DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends chromium; } \
       >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    rm -f "$log"
    echo "install-browser.sh: apt-get could not install chromium (output above)." >&2
    exit 1
fi
rm -f "$log"

if [ ! -x "$CHROMIUM" ]; then
    echo "install-browser.sh: the chromium package installed, but $CHROMIUM is missing." >&2
    exit 1
fi
echo "install-browser.sh: $("$CHROMIUM" --version 2>/dev/null || echo chromium) installed."
