#!/usr/bin/env bash
# Every check, in order: lint, typecheck, generated-code drift, the C element tests, then tap
# (unit tests and end-to-end tests with real gst-launch-1.0 children, SRT and RTP).
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== lint";        npx eslint --max-warnings=0 .
echo "== typecheck";   npx tsc -p tsconfig.json --noEmit
echo "== C elements";  meson test -C gst-plugins/build --print-errorlogs --num-processes 2
echo "== tap";         npx tap
