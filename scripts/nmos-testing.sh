#!/usr/bin/env bash
# Runs AMWA's NMOS Testing Tool (github.com/AMWA-TV/nmos-testing, commit 264fb7a) against the
# engine (dist/, built) with two pipelines, one of them with an ST 2022-7 leg, inside a network
# namespace this script makes and always removes; runs IS-04-01, IS-04-03, IS-05-01 and IS-05-02,
# prints the result table and exits 1 on any Fail. Not part of `npm test` (docs/nmos.md).
#
# The sources come from folders (no PyPI and no GitHub access needed at run time):
#   NMOS_TESTING_DIR  a checkout of AMWA-TV/nmos-testing at 264fb7a; its cache/ holds clones of
#                     AMWA-TV/is-04, is-05, bcp-002-01, bcp-002-02, bcp-004-01 and
#                     nmos-parameter-registers (`git clone`s: the tool pulls them at start; every
#                     other specification is switched off);
#   NMOS_TESTING_PY   a folder put on PYTHONPATH with ramlfications (spotify/ramlfications 0.1.9),
#                     jsonref.py and proxytypes.py (gazpachoking/jsonref v1.1.0), xeger
#                     (crdoconnor/xeger), zeroconf (python-zeroconf 0.150.0, src/zeroconf) and
#                     Crypto, a link to Debian's Cryptodome (scripts/nmos-testing-pypath.sh makes it);
#   NMOS_TESTING_BIN  optional: a folder put first on PATH, with `sdpoker` (AMWA-TV/sdpoker 0.4.0,
#                     `npm install --omit=dev`, its sdpoker.js) for IS-05-01 test_41;
# plus Debian's python3 packages (/work/shared/notes/nmos-testing-on-debian.md lists them).
#
# The namespace (root and iproute2 needed): loopback, two veth pairs whose both ends stay inside
# (nt0a 10.77.0.1/24, the engine's and the tool's interface; nt1a 10.77.1.1/24, the second leg's),
# and a sink interface (ntsa, a veth end without ARP) that takes 192.0.2.0/24 (the tool's registry that must time out and
# its unicast stream target) and all multicast but mDNS (224.0.0.251 goes out nt0a), so nothing
# leaves the namespace and a connect to 192.0.2.x times out. The engine finds the tool's mock
# registries by mDNS (`registries = []`), as a node on a plant's network does.
#
# Usage: NMOS_TESTING_DIR=... NMOS_TESTING_PY=... [NMOS_TESTING_BIN=...] \
#          scripts/nmos-testing.sh [output folder] [suite ...]
#   default suites: IS-04-01 IS-04-03 IS-05-01 IS-05-02; the JSON results and logs go to the
#   output folder (default: a new temporary folder).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SELF="$ROOT/scripts/nmos-testing.sh"
TOOL=${NMOS_TESTING_DIR:-}
PYDEPS=${NMOS_TESTING_PY:-}
[ -n "$TOOL" ] || { echo "nmos-testing: set NMOS_TESTING_DIR to a checkout of AMWA-TV/nmos-testing at 264fb7a" >&2; exit 2; }
[ -n "$PYDEPS" ] || { echo "nmos-testing: set NMOS_TESTING_PY to the folder of the Python modules Debian lacks" >&2; exit 2; }
OUT=${1:-$(mktemp -d)}
[ $# -gt 0 ] && shift
SUITES=("$@")
[ ${#SUITES[@]} -gt 0 ] || SUITES=(IS-04-01 IS-04-03 IS-05-01 IS-05-02)
PYTHON=/usr/bin/python3
NMOS_PORT=3212
REST_PORT=18080
ADDR=10.77.0.1
ADDR2=10.77.1.1
# The specification repositories the four suites read (every other one is switched off).
SPECS="is-04 is-05 bcp-002-01 bcp-002-02 bcp-004-01 nmos-parameter-registers"

# ---------------------------------------------------------------------------------------------
# Outside: check, make the namespace, run this script again inside it, always remove it.
if [ -z "${NMOS_TESTING_NETNS:-}" ]; then
  [ "$(id -u)" = 0 ] || { echo "nmos-testing: needs root (ip netns)" >&2; exit 2; }
  [ "$(git -C "$TOOL" rev-parse --short=7 HEAD)" = 264fb7a ] || { echo "nmos-testing: $TOOL is not at 264fb7a" >&2; exit 2; }
  for spec in $SPECS; do
    [ -d "$TOOL/cache/$spec/.git" ] || { echo "nmos-testing: no clone of AMWA-TV/$spec in $TOOL/cache/$spec" >&2; exit 2; }
  done
  for module in ramlfications jsonref.py proxytypes.py xeger zeroconf Crypto; do
    [ -e "$PYDEPS/$module" ] || { echo "nmos-testing: $PYDEPS has no $module (scripts/nmos-testing-pypath.sh)" >&2; exit 2; }
  done
  [ -f "$ROOT/dist/audio-engine.mjs" ] || { echo "nmos-testing: build the engine first (npm run build)" >&2; exit 2; }
  for suite in "${SUITES[@]}"; do
    case $suite in IS-04-01|IS-04-03|IS-05-01|IS-05-02) ;; *) echo "nmos-testing: unknown suite $suite (IS-04-01, IS-04-03, IS-05-01, IS-05-02)" >&2; exit 2 ;; esac
  done
  mkdir -p "$OUT"
  OUT=$(cd "$OUT" && pwd)

  # The tool's own settings: mDNS on the namespace's interface; every specification but $SPECS
  # off (the tool then clones none at start).
  "$PYTHON" - "$TOOL" $SPECS <<'EOF'
import re, sys
tool = sys.argv[1]
keys = re.findall(r'^    "([a-z0-9-]+)": \{\n        "repo"', open(f"{tool}/nmostesting/Config.py").read(), re.M)
lines = ["from . import Config as CONFIG", "CONFIG.ENABLE_DNS_SD = True", "CONFIG.DNS_SD_MODE = 'multicast'",
         "CONFIG.BIND_INTERFACE = 'nt0a'"]
lines += [f'CONFIG.SPECIFICATIONS["{k}"]["repo"] = None' for k in keys if k not in sys.argv[2:]]
open(f"{tool}/nmostesting/UserConfig.py", "w").write("\n".join(lines) + "\n")
EOF

  NS="nmostool-$$"
  cleanup() {
    local pids
    pids=$(ip netns pids "$NS" 2>/dev/null || true)
    # Every process in the namespace was started by this script: TERM, then KILL what is left.
    for pid in $pids; do kill -TERM "$pid" 2>/dev/null || true; done
    for _ in $(seq 1 50); do
      [ -z "$(ip netns pids "$NS" 2>/dev/null || true)" ] && break
      sleep 0.1
    done
    for pid in $(ip netns pids "$NS" 2>/dev/null || true); do kill -KILL "$pid" 2>/dev/null || true; done
    ip netns del "$NS" 2>/dev/null || true
    rm -rf "/etc/netns/$NS"
  }
  trap cleanup EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  ip netns add "$NS"
  # No DNS query leaves: `ip netns exec` mounts this resolv.conf (no search domain, no server).
  mkdir -p "/etc/netns/$NS"
  echo "nameserver 127.0.0.1" > "/etc/netns/$NS/resolv.conf"
  in_ns() { ip netns exec "$NS" "$@"; }
  in_ns ip link set lo up
  in_ns ip link add nt0a type veth peer name nt0b
  in_ns ip link add nt1a type veth peer name nt1b
  # The sink: a veth pair without addresses and without ARP (ntsa's packets go out to ntsb and
  # are dropped there: no address of theirs, no forwarding); no dummy module is needed.
  in_ns ip link add ntsa type veth peer name ntsb
  in_ns ip link set ntsa arp off
  in_ns ip addr add "$ADDR/24" dev nt0a
  in_ns ip addr add "$ADDR2/24" dev nt1a
  for link in nt0a nt0b nt1a nt1b ntsa ntsb; do in_ns ip link set "$link" up; done
  in_ns ip route add 192.0.2.0/24 dev ntsa src "$ADDR"
  in_ns ip route add 224.0.0.0/4 dev ntsa src "$ADDR"
  in_ns ip route add 224.0.0.251/32 dev nt0a src "$ADDR"
  # In the background, so that a TERM or INT to this script runs the clean-up at once.
  in_ns env NMOS_TESTING_NETNS="$NS" "$SELF" "$OUT" "${SUITES[@]}" &
  rc=0
  wait $! || rc=$?
  exit "$rc"
fi

# ---------------------------------------------------------------------------------------------
# Inside the namespace: the engine, two pipelines, the suites, the table.
[ -z "${NMOS_TESTING_BIN:-}" ] || export PATH="$NMOS_TESTING_BIN:$PATH"
mkdir -p "$OUT/engine"
cat > "$OUT/engine/config.toml" <<EOF
mode = "self-hosted"
[server]
bind = "$ADDR"
rest_port = $REST_PORT
grpc_port = $((REST_PORT + 1))
dashboard_port = $((REST_PORT + 2))
[engine]
state_dir = "state"
cpu_reserve_percent = 0
[aes67]
sap = false
interface = "nt0a"
[nmos]
enabled = true
http_port = $NMOS_PORT
registries = []
EOF
rm -rf "$OUT/engine/state"
(cd "$OUT/engine" && exec setsid node "$ROOT/dist/audio-engine.mjs" --config "$OUT/engine/config.toml" > engine.log 2>&1) &
ENGINE=$!
trap 'kill -TERM -- -$ENGINE 2>/dev/null || true; wait $ENGINE 2>/dev/null || true' EXIT
up=no
for _ in $(seq 1 60); do
  curl -sf "http://$ADDR:$NMOS_PORT/x-nmos/node/v1.3/self" > /dev/null && { up=yes; break; }
  sleep 1
done
[ "$up" = yes ] || { echo "nmos-testing: the engine's Node API did not answer within 60 s; $OUT/engine/engine.log:" >&2; tail -20 "$OUT/engine/engine.log" >&2; exit 1; }

# A busy host answers 503 HOST_AT_CAPACITY with Retry-After 10 (docs/capacity.md): try 12 times.
api() {
  local status
  for _ in $(seq 1 12); do
    status=$(curl -s -o "$OUT/engine/answer.json" -w '%{http_code}' -X POST -H 'content-type: application/json' "http://$ADDR:$REST_PORT/api/v1/pipelines" -d "$1")
    [ "$status" = 503 ] || break
    sleep 10
  done
  [ "$status" = 201 ] || { echo "nmos-testing: the engine refused a pipeline ($status): $(cat "$OUT/engine/answer.json")" >&2; exit 1; }
}
api '{"name":"nmos two legs","input":{"type":"srt","port":19002,"latency":120},"output":{"type":"rtp","host":"239.69.0.1","port":5004,"interface":"nt0a","redundant":{"host":"239.69.1.1","port":5004,"interface":"nt1a"}}}'
api '{"name":"nmos one leg","input":{"type":"srt","port":19001,"latency":120},"output":{"type":"rtp","host":"239.69.0.2","port":5004,"interface":"nt0a"}}'

run() {
  local suite=$1 args
  case $suite in
    IS-04-01|IS-04-03) args=(--host "$ADDR" --port "$NMOS_PORT" --version v1.3) ;;
    IS-05-01) args=(--host "$ADDR" --port "$NMOS_PORT" --version v1.1) ;;
    IS-05-02) args=(--host "$ADDR" "$ADDR" --port "$NMOS_PORT" "$NMOS_PORT" --version v1.3 v1.1) ;;
    *) echo "nmos-testing: unknown suite $suite" >&2; exit 2 ;;
  esac
  echo "nmos-testing: $suite" >&2
  (cd "$TOOL" && PYTHONPATH="$PYDEPS" timeout 1200 "$PYTHON" nmos-test.py suite "$suite" "${args[@]}" --output "$OUT/$suite.json" > "$OUT/$suite.log" 2>&1) || true
  [ -s "$OUT/$suite.json" ] || { echo "nmos-testing: $suite wrote no results (see $OUT/$suite.log)" >&2; exit 1; }
}
for suite in "${SUITES[@]}"; do run "$suite"; done

# The table, then every test that is not a Pass with the tool's words; exit 1 on any Fail.
"$PYTHON" - "$OUT" "${SUITES[@]}" <<'EOF'
import collections, json, sys
out, suites = sys.argv[1], sys.argv[2:]
states = ["Pass", "Fail", "Warning", "Could Not Test", "Not Implemented", "Test Disabled", "Not Applicable", "Manual"]
failed = False
print("| suite | " + " | ".join(states) + " |")
print("|---|" + "---:|" * len(states))
notes = []
for suite in suites:
    results = json.load(open(f"{out}/{suite}.json"))["results"]
    count = collections.Counter(r["state"] for r in results)
    print(f"| {suite} | " + " | ".join(str(count[s]) for s in states) + " |")
    failed |= count["Fail"] > 0
    notes += [f"{suite} {r['state']} {r['name']}: {r.get('detail') or ''}" for r in results
              if r["state"] in ("Fail", "Warning", "Could Not Test", "Not Implemented")]
print("\n".join(notes))
print(f"results: {out}")
sys.exit(1 if failed else 0)
EOF
