#!/usr/bin/env bash
# Every check, in order: lint, typecheck, generated-code drift, the C element tests, then tap
# (unit tests and end-to-end tests with real gst-launch-1.0 children, SRT and RTP) under the
# machine's Node 20, and tap again under Node 26.
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
  npx tap 2>&1 | tee "$log" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "== tap failed ($(node --version)): the failed points"
    { awk -f scripts/tap-failures.awk "$log" | head -n 100; } || true # head may end awk early (SIGPIPE)
    echo "== tap failed: the test files"
    grep -E '^not ok ' "$log" || true
  fi
  rm -f "$log"
  return "$rc"
}

echo "== tap";         tap_run

# The whole suite again under the official Node 26 binary (test/node-versions, installed by
# scripts/setup.sh --test): its bin first on PATH, so node, npx tap and every process tap forks
# (process.execPath: the tests, the engines they start, the systemd unit's ExecStart in
# test/systemd/boot.test.ts) run on it. All of it, e2e included: 17-23 min a run on the 2-core
# machine, so lint, C tests and both runs stay near 45 min, well inside CI's 90 minutes.
node26="$PWD/test/node-versions/node_modules/node26/bin"
[ -x "$node26/node" ] || { echo "test: $node26/node is missing: run scripts/setup.sh --test" >&2; exit 1; }
echo "== tap (node 26)"
PATH="$node26:$PATH" tap_run
