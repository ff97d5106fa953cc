#!/usr/bin/env bash
# Every check, in order: lint, typecheck, generated-code drift, the C element tests, then tap
# (unit tests and end-to-end tests with real gst-launch-1.0 children, SRT and RTP) under the
# machine's Node 20, and the in-process files plus one end-to-end file again under Node 26.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== lint";        npx eslint --max-warnings=0 .
echo "== typecheck";   npx tsc -p tsconfig.json --noEmit
echo "== C elements";  meson test -C gst-plugins/build --print-errorlogs --num-processes 2

# tap as usual, and when it fails, its failed points again at the very end (scripts/tap-failures.awk):
# a CI log is read from its tail, where tap's coverage table would otherwise hide them.
tap_run() {
  local log rc=0
  log="$(mktemp)"
  npx tap "$@" 2>&1 | tee "$log" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "== tap failed ($(node --version)): the failed points"
    { awk -f scripts/tap-failures.awk "$log" | head -n 100; } || true # head may end awk early (SIGPIPE)
    echo "== tap failed: the test files"
    grep -E '^not ok ' "$log" || true
  fi
  rm -f "$log"
  return "$rc"
}

echo "== tap (node 20): every file";         tap_run

# Under the official Node 26 binary (test/node-versions, installed by scripts/setup.sh --test),
# its bin first on PATH so node, npx tap and every process tap forks run on it: every test file
# that runs inside tap's own process (scripts/test-files.mjs sorts them: no import chain to
# node:child_process or execa), two at a time, and the engine's bundle once end to end
# (passthrough: it starts on Node 26, takes an SRT caller and sends the audio as RTP). The files
# that can start children (GStreamer, senders, browsers, systemd) are most of the suite's time on
# the 2-core machine and run once, under Node 20 above; coverage is measured there only.
node26="$PWD/test/node-versions/node_modules/node26/bin"
[ -x "$node26/node" ] || { echo "test: $node26/node is missing: run scripts/setup.sh --test" >&2; exit 1; }
mapfile -t in_process < <(node scripts/test-files.mjs in-process)
echo "== tap (node 26): ${#in_process[@]} in-process files and the engine end to end"
PATH="$node26:$PATH" tap_run --jobs=2 --disable-coverage "${in_process[@]}" test/e2e/passthrough.test.ts
