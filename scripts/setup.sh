#!/usr/bin/env bash
# Set-up of the engine on Debian 12: system packages, npm packages from the lockfile, the
# TypeScript build and our GStreamer elements. Idempotent and quiet when all is in place.
#   scripts/setup.sh          everything the engine needs to run
#   scripts/setup.sh --test   also what the tests need
set -euo pipefail
cd "$(dirname "$0")/.."

want_test=0
[ "${1:-}" = "--test" ] && want_test=1

RUNTIME_PACKAGES=(
  gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad
  gstreamer1.0-libav libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev libebur128-dev
  meson ninja-build pkg-config gcc util-linux procps
)
# prometheus: promtool checks our metrics; systemd: systemd-analyze checks the unit; systemd-container:
# systemd-nspawn boots a real systemd for the unit test; darkice, ezstream, ices2, liquidsoap,
# vorbis-tools: real Icecast source clients; linuxptp: ptp4l/pmc for the PTP tests; srt-tools:
# srt-live-transmit as a second SRT implementation; curl and python3: the AES67 test's requests
# into a network namespace and its DSCP receiver (IP_RECVTOS); chromium: the dashboard page's
# browser tests (driven by playwright-core, nothing downloaded). On an AES67 host the engine reads
# ptp4l through pmc, also from linuxptp (docs/aes67.md); without it PTP shows "unavailable".
TEST_PACKAGES=(ffmpeg iproute2 time prometheus systemd systemd-container darkice ezstream ices2 liquidsoap vorbis-tools linuxptp srt-tools curl python3 chromium)

packages=("${RUNTIME_PACKAGES[@]}")
[ "$want_test" = 1 ] && packages+=("${TEST_PACKAGES[@]}")

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# npm packages, exactly as locked; skipped when node_modules already matches the lockfile.
if [ ! -f node_modules/.package-lock.json ] || ! cmp -s <(sed -n '/"packages"/,$p' package-lock.json | grep -v '"name": "audio-engine"') <(sed -n '/"packages"/,$p' node_modules/.package-lock.json | grep -v '"name": "audio-engine"') 2>/dev/null; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi

# TypeScript build.
npm run --silent build

# Our GStreamer elements.
if [ ! -f gst-plugins/build/build.ninja ]; then
  meson setup gst-plugins/build gst-plugins >/dev/null
fi
ninja -C gst-plugins/build >/dev/null
