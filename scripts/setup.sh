#!/usr/bin/env bash
# Installs what Reactor needs on Debian 12 (or newer): libuv, OpenSSL's libcrypto, hiredis, zlib,
# pkg-config and llhttp, and the servers the tests start (redis-server, nginx, chromium).
# Idempotent: a second run checks and returns in well under a second.
set -euo pipefail

PREFIX=${LLHTTP_PREFIX:-/usr/local}
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

have_pc() { pkg-config --exists "$1" 2>/dev/null; }

apt_install() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "setup: installing ${missing[*]}"
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

apt_install pkg-config libuv1-dev libssl-dev libhiredis-dev zlib1g-dev curl
# A cluster's shared log: the tests start their own redis-server on a loopback port, and cut a node
# off from it in a network namespace of their own (ip, tc).
apt_install redis-server iproute2
command -v python3 >/dev/null || apt_install python3
command -v node >/dev/null || apt_install nodejs
# The dashboard's browser tests (Tests/e2e/test_dashboard.py): headless Chromium and its WebDriver,
# from Debian, so that Selenium never downloads a browser or a driver.
apt_install chromium chromium-driver
# The operations tests: nginx as a TLS reverse proxy (openssl makes its certificate), and
# systemd-analyze to verify the unit in deploy/.
apt_install nginx-light openssl
command -v systemd-analyze >/dev/null || apt_install systemd

# llhttp: the distribution's package where it has one; otherwise build the C sources
# that Debian's node-llhttp ships into $PREFIX, under the names upstream's install uses.
# -msse4.2 where the CPU has it: llparse's generated parser then skips the bytes of header names,
# values and the target 16 at a time (SSE4.2 string compares) instead of one per turn of its state
# machine. The flags are written into the .pc file, and a library in $PREFIX without that line
# (built here earlier with other flags, or installed there by hand) is built again; a distribution's
# libllhttp-dev is left alone.
llhttp_cflags="-O3 -fPIC"
if grep -qw sse4_2 /proc/cpuinfo 2>/dev/null; then llhttp_cflags="$llhttp_cflags -msse4.2"; fi
llhttp_mark="# built from node-llhttp's sources by Reactor's scripts/setup.sh: cc $llhttp_cflags"
llhttp_pc="$PREFIX/lib/pkgconfig/libllhttp.pc"
built_here_with_other_flags() {
    [ -f "$llhttp_pc" ] && ! grep -qxF "$llhttp_mark" "$llhttp_pc" \
        && ! dpkg-query -W -f='${Status}' libllhttp-dev 2>/dev/null | grep -q "install ok installed"
}
if ! have_pc libllhttp || built_here_with_other_flags; then
    if apt-cache show libllhttp-dev >/dev/null 2>&1; then
        apt_install libllhttp-dev
    else
        apt_install node-llhttp
        src=/usr/share/llhttp
        hdr=/usr/share/include/llhttp/llhttp.h
        version=$(awk '/#define LLHTTP_VERSION_(MAJOR|MINOR|PATCH)/ {v = v (v ? "." : "") $3} END {print v}' "$hdr")
        work=$(mktemp -d)
        trap 'rm -rf "$work"' EXIT
        echo "setup: building llhttp $version from $src (cc $llhttp_cflags)"
        for c in api http llhttp; do
            # shellcheck disable=SC2086 # the flags are words
            cc $llhttp_cflags -I"$(dirname "$hdr")" -c "$src/$c.c" -o "$work/$c.o"
        done
        ar rcs "$work/libllhttp.a" "$work"/api.o "$work"/http.o "$work"/llhttp.o
        $SUDO install -d "$PREFIX/lib/pkgconfig" "$PREFIX/include"
        $SUDO install -m 644 "$work/libllhttp.a" "$PREFIX/lib/libllhttp.a"
        $SUDO install -m 644 "$hdr" "$PREFIX/include/llhttp.h"
        cat > "$work/libllhttp.pc" <<PC
$llhttp_mark
prefix=$PREFIX
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: libllhttp
Description: Node.js llhttp Library
Version: $version
Libs: -L\${libdir} -lllhttp
Cflags: -I\${includedir}
PC
        $SUDO install -m 644 "$work/libllhttp.pc" "$llhttp_pc"
    fi
fi

for pc in libuv libllhttp libcrypto libssl zlib; do
    have_pc "$pc" || { echo "setup: pkg-config cannot find $pc" >&2; exit 1; }
done
command -v swift >/dev/null || { echo "setup: swift is not on PATH (Swift 6.0 or newer is needed)" >&2; exit 1; }

# The end-to-end tests (Tests/e2e) need pytest and websockets (12.0 or newer, for its sync client),
# and for the API contract (test_openapi.py) schemathesis and openapi-spec-validator; the rest is
# Python's standard library.
root=$(cd "$(dirname "$0")/.." && pwd)
if ! python3 -c 'import pytest, selenium, websockets.sync.client, websockets.asyncio.client, schemathesis, openapi_spec_validator, prometheus_client, cryptography' >/dev/null 2>&1; then
    echo "setup: installing the Python test requirements"
    # Debian's own Python refuses pip installs (PEP 668): its python3-pytest and python3-websockets
    # packages serve then (Debian 13's websockets is new enough; Debian 12's is not).
    python3 -m pip install -q -r "$root/Tests/e2e/requirements.txt" 2>/dev/null \
        || apt_install python3-pytest python3-websockets python3-selenium python3-cryptography
fi
