#!/bin/sh
# Installs the Debian packages the tests use beside Python's:
#   chromium  /usr/bin/chromium  the browser tests/browser/ drive headless
#   faketime  /usr/bin/faketime  runs `welcomemat demo` with the clock shifted (tests/cli/test_demo_calendar.py)
#   redis-server  /usr/bin/redis-server  the Redis Cluster nodes tests/cluster/ start (cluster-enabled yes)
#   redis-tools   /usr/bin/redis-cli     `redis-cli --cluster create` joins them into one cluster
#   openssl   /usr/bin/openssl   a self-signed certificate for the https site a hosted CTA lands on
#                                (tests/browser/test_hosted_cta_click.py)
# Idempotent and quiet: does nothing when every program is there. Uses sudo only when not
# root. No download of its own: the distribution's packages, from apt.
set -eu

# package:program, one per line
WANTED="chromium:/usr/bin/chromium
faketime:/usr/bin/faketime
redis-server:/usr/bin/redis-server
redis-tools:/usr/bin/redis-cli
openssl:/usr/bin/openssl"

missing=""
for entry in $WANTED; do
    package=${entry%%:*}
    program=${entry#*:}
    if [ ! -x "$program" ]; then
        missing="$missing $package"
    fi
done
missing=${missing# }

if [ -z "$missing" ]; then
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
elif command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
else
    echo "install-test-deps.sh: missing $missing; installing needs root (no sudo found)." >&2
    echo "  Run as root: apt-get update && apt-get install -y --no-install-recommends $missing" >&2
    exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-test-deps.sh: missing $missing, and this system has no apt-get." >&2
    echo "  Install them with your package manager (programs: $(echo "$WANTED" | tr '\n' ' '))." >&2
    exit 1
fi

echo "install-test-deps.sh: installing Debian's $missing (for the tests) ..."
log=$(mktemp)
# $missing is a space-separated list of package names: split on purpose.
# shellcheck disable=SC2086
if ! { $SUDO apt-get update -q && \
       DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends $missing; } \
       >"$log" 2>&1; then
    tail -n 20 "$log" >&2
    rm -f "$log"
    echo "install-test-deps.sh: apt-get could not install $missing (output above)." >&2
    exit 1
fi
rm -f "$log"

for entry in $WANTED; do
    program=${entry#*:}
    if [ ! -x "$program" ]; then
        echo "install-test-deps.sh: the packages installed, but $program is missing." >&2
        exit 1
    fi
done
echo "install-test-deps.sh: $("/usr/bin/chromium" --version 2>/dev/null || echo chromium), $(faketime --version 2>&1 | grep -m 1 Version || echo faketime), $(/usr/bin/redis-server --version 2>/dev/null | cut -d' ' -f1-3 || echo redis-server) installed."
