#!/usr/bin/env bash
# Runs AMWA's NMOS Testing Tool (github.com/AMWA-TV/nmos-testing, commit 264fb7a) against the
# engine (dist/, built) with two pipelines, one of them with an ST 2022-7 leg, and fails on any
# Fail. Not part of `npm test` (docs/nmos.md).
#
# The sources come from folders (no PyPI and no GitHub access needed at run time):
#   NMOS_TESTING_DIR  a checkout of AMWA-TV/nmos-testing at 264fb7a; its cache/ holds clones of
#                     AMWA-TV/is-04, AMWA-TV/is-05 and AMWA-TV/bcp-002-01 (every other specification
#                     is switched off);
#   NMOS_TESTING_PY   a folder put on PYTHONPATH with ramlfications (spotify/ramlfications 0.1.9),
#                     jsonref.py and proxytypes.py (gazpachoking/jsonref v1.1.0), xeger
#                     (crdoconnor/xeger), zeroconf (python-zeroconf 0.150.0, src/zeroconf) and
#                     Crypto, a link to Debian's Cryptodome;
# plus Debian's python3 packages (/work/shared/notes/nmos-testing-on-debian.md lists them).
#
# What it runs (DNS-SD off: the engine on 127.0.0.1 with a configured registry that refuses):
# IS-05-01, IS-05-02 and IS-04-01 (its DNS-SD tests are then "Test Disabled"). Not yet: the run
# inside a network namespace with mDNS that IS-04-01's registration tests and IS-04-03 need.
#
# Usage: NMOS_TESTING_DIR=... NMOS_TESTING_PY=... scripts/nmos-testing.sh [output folder]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOOL=${NMOS_TESTING_DIR:?NMOS_TESTING_DIR: a checkout of AMWA-TV/nmos-testing at 264fb7a}
PYDEPS=${NMOS_TESTING_PY:?NMOS_TESTING_PY: the folder of the Python modules Debian lacks}
OUT=${1:-$(mktemp -d)}
PYTHON=/usr/bin/python3
NMOS_PORT=${NMOS_PORT:-3212}
REST_PORT=${REST_PORT:-18080}

[ "$(git -C "$TOOL" rev-parse --short=7 HEAD)" = 264fb7a ] || { echo "nmos-testing: $TOOL is not at 264fb7a" >&2; exit 2; }
for spec in is-04 is-05 bcp-002-01; do
  [ -d "$TOOL/cache/$spec/.git" ] || { echo "nmos-testing: no clone of AMWA-TV/$spec in $TOOL/cache/$spec" >&2; exit 2; }
done
[ -f "$ROOT/dist/audio-engine.mjs" ] || { echo "nmos-testing: build the engine first (npm run build)" >&2; exit 2; }

# Every specification but IS-04, IS-05 and BCP-002-01 off: the tool clones none at start.
"$PYTHON" - "$TOOL" <<'EOF'
import re, sys
tool = sys.argv[1]
keys = re.findall(r'^    "([a-z0-9-]+)": \{\n        "repo"', open(f"{tool}/nmostesting/Config.py").read(), re.M)
lines = ["from . import Config as CONFIG", "CONFIG.ENABLE_DNS_SD = False"]
lines += [f'CONFIG.SPECIFICATIONS["{k}"]["repo"] = None' for k in keys if k not in ("is-04", "is-05", "bcp-002-01")]
open(f"{tool}/nmostesting/UserConfig.py", "w").write("\n".join(lines) + "\n")
EOF

mkdir -p "$OUT/engine"
cat > "$OUT/engine/config.toml" <<EOF
mode = "self-hosted"
[server]
bind = "127.0.0.1"
rest_port = $REST_PORT
grpc_port = $((REST_PORT + 1))
dashboard_port = $((REST_PORT + 2))
[engine]
state_dir = "state"
[aes67]
sap = false
[nmos]
enabled = true
http_port = $NMOS_PORT
registries = ["http://127.0.0.1:9"]
EOF
(cd "$OUT/engine" && exec setsid node "$ROOT/dist/audio-engine.mjs" --config "$OUT/engine/config.toml" > engine.log 2>&1) &
ENGINE=$!
trap 'kill -- -$ENGINE 2>/dev/null || true; wait $ENGINE 2>/dev/null || true' EXIT
for _ in $(seq 1 60); do
  curl -sf "http://127.0.0.1:$NMOS_PORT/x-nmos/node/v1.3/self" > /dev/null && break
  sleep 1
done

# A busy host answers 503 HOST_AT_CAPACITY with Retry-After 10 (docs/capacity.md): try 12 times.
api() {
  local status
  for _ in $(seq 1 12); do
    status=$(curl -s -o "$OUT/engine/answer.json" -w '%{http_code}' -X POST -H 'content-type: application/json' "http://127.0.0.1:$REST_PORT/api/v1/pipelines" -d "$1")
    [ "$status" = 503 ] || break
    sleep 10
  done
  [ "$status" = 201 ] || { echo "nmos-testing: the engine refused a pipeline ($status): $(cat "$OUT/engine/answer.json")" >&2; exit 1; }
}
api '{"name":"nmos two legs","input":{"type":"srt","port":19002,"latency":120},"output":{"type":"rtp","host":"127.0.0.1","port":19102,"redundant":{"host":"127.0.0.2","port":19103}}}'
api '{"name":"nmos one leg","input":{"type":"srt","port":19001,"latency":120},"output":{"type":"rtp","host":"127.0.0.1","port":19101}}'

run() {
  local suite=$1; shift
  (cd "$TOOL" && PYTHONPATH="$PYDEPS" "$PYTHON" nmos-test.py suite "$suite" "$@" --output "$OUT/$suite.json" > "$OUT/$suite.log" 2>&1) || true
}
run IS-05-01 --host 127.0.0.1 --port "$NMOS_PORT" --version v1.1
run IS-05-02 --host 127.0.0.1 127.0.0.1 --port "$NMOS_PORT" "$NMOS_PORT" --version v1.3 v1.1
run IS-04-01 --host 127.0.0.1 --port "$NMOS_PORT" --version v1.3

# The table, each Fail and Warning with the tool's words; exit 1 on any Fail.
"$PYTHON" - "$OUT" IS-04-01 IS-05-01 IS-05-02 <<'EOF'
import collections, json, sys
out, suites = sys.argv[1], sys.argv[2:]
states = ["Pass", "Fail", "Warning", "Could Not Test"]
failed = False
print("| suite | " + " | ".join(states) + " |")
print("|---|" + "---:|" * len(states))
notes = []
for suite in suites:
    results = json.load(open(f"{out}/{suite}.json"))["results"]
    count = collections.Counter(r["state"] for r in results)
    print(f"| {suite} | " + " | ".join(str(count[s]) for s in states) + " |")
    failed |= count["Fail"] > 0
    notes += [f"{suite} {r['state']} {r['name']}: {r.get('detail') or ''}" for r in results if r["state"] in ("Fail", "Warning")]
print("\n".join(notes))
sys.exit(1 if failed else 0)
EOF
