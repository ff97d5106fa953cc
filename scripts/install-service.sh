#!/usr/bin/env bash
# Installs the engine as a systemd service on Debian 12 (run as root, from a built checkout:
# scripts/setup.sh first).
#
#   /opt/audio-engine/               dist/, production node_modules/, gst-plugins/build/*.so,
#                                    package.json, docs/, config.toml.example
#   /etc/audio-engine/config.toml    kept when it exists; else the repository's defaults with
#                                    state_dir = "/var/lib/audio-engine" (mode 0640, group audio-engine)
#   /var/lib/audio-engine/           state (pipeline records, GStreamer registry): StateDirectory=
#   /etc/systemd/system/audio-engine.service, enabled and (re)started
#   /etc/systemd/system/ptp4l@.service.d/audio-engine.conf  drop-ins for Debian's linuxptp units:
#   /etc/systemd/system/ptp4l.service.d/audio-engine.conf   ptp4l's socket /run/ptp4l gets the
#                                    group audio-engine at each ptp4l start, so the engine's pmc
#                                    can ask it (harmless without linuxptp; docs/aes67.md)
#   user and group audio-engine      system account, no login, no home of its own
#
# Options:
#   --no-start      install and enable, but do not start or restart the service
#   DESTDIR=/path   stage everything under /path (no user, no systemctl): for packaging and checks
#
# Where systemd is not running (a container, a chroot) the unit is installed but systemctl is
# skipped with a notice; the script still succeeds.
set -euo pipefail
cd "$(dirname "$0")/.."

PREFIX=/opt/audio-engine
ETC=/etc/audio-engine
STATE=/var/lib/audio-engine
UNIT_DIR=/etc/systemd/system
USER_NAME=audio-engine
DESTDIR="${DESTDIR:-}"
start=1
for arg in "$@"; do
  case "$arg" in
    --no-start) start=0 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "install-service: unknown option $arg" >&2; exit 2 ;;
  esac
done

if [ -z "$DESTDIR" ] && [ "$(id -u)" -ne 0 ]; then
  echo "install-service: run as root (or with DESTDIR=... to stage)" >&2
  exit 1
fi
for need in dist/audio-engine.mjs node_modules package.json package-lock.json config.toml systemd/audio-engine.service systemd/ptp4l.service.d/audio-engine.conf; do
  [ -e "$need" ] || { echo "install-service: $need is missing: run scripts/setup.sh first" >&2; exit 1; }
done
ls gst-plugins/build/*.so >/dev/null 2>&1 || { echo "install-service: gst-plugins/build/*.so missing: run scripts/setup.sh first" >&2; exit 1; }

NODE="$(command -v node || true)"
[ -n "$NODE" ] || { echo "install-service: node is not installed" >&2; exit 1; }
NODE="$(readlink -f "$NODE")"

# The service account.
if [ -z "$DESTDIR" ] && ! getent passwd "$USER_NAME" >/dev/null; then
  useradd --system --user-group --home-dir "$STATE" --no-create-home --shell /usr/sbin/nologin \
    --comment "Audio Pipeline Engine" "$USER_NAME"
  echo "install-service: created user $USER_NAME"
fi

# The build: a fresh tree next to the old one, then swapped in (a running engine keeps its files).
root="$DESTDIR$PREFIX"
mkdir -p "$(dirname "$root")"
stage="$(mktemp -d "$(dirname "$root")/.audio-engine.XXXXXX")"
trap 'rm -rf "$stage"' EXIT
cp -a dist package.json package-lock.json "$stage/"
mkdir -p "$stage/gst-plugins/build" "$stage/docs"
cp -a gst-plugins/build/*.so "$stage/gst-plugins/build/"
cp -a docs/. "$stage/docs/"
cp -a config.toml "$stage/config.toml.example"
# Production dependencies only: the installed tree pruned offline (no registry needed), else npm ci.
cp -a node_modules "$stage/"
if ! (cd "$stage" && npm prune --omit=dev --no-audit --no-fund --loglevel=error >/dev/null); then
  rm -rf "$stage/node_modules"
  (cd "$stage" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
fi
# ProtectHome=yes hides /home and /root, PrivateTmp=yes /tmp and /var/tmp: a node found there
# (nvm; a checkout's test/node-versions/) is copied into the tree.
case "$NODE" in
  /home/*|/root/*|/run/user/*|/tmp/*|/var/tmp/*)
    mkdir -p "$stage/bin"
    cp -a "$NODE" "$stage/bin/node"
    NODE="$PREFIX/bin/node"
    ;;
esac
chmod -R u=rwX,go=rX "$stage"
if [ -d "$root" ]; then mv "$root" "$root.old.$$"; fi
mv "$stage" "$root"
trap - EXIT
rm -rf "$root.old.$$"

# The configuration: never overwritten (operators edit it); a new one gets an absolute state dir.
mkdir -p "$DESTDIR$ETC"
if [ ! -e "$DESTDIR$ETC/config.toml" ]; then
  sed -E "s|^state_dir *= *\"[^\"]*\"(.*)$|state_dir = \"$STATE\"\1|" config.toml > "$DESTDIR$ETC/config.toml"
  grep -q "^state_dir = \"$STATE\"" "$DESTDIR$ETC/config.toml" || { echo "install-service: cannot set state_dir" >&2; exit 1; }
  echo "install-service: wrote $ETC/config.toml (add [[stations]] there: docs/stations.md)"
else
  echo "install-service: kept the existing $ETC/config.toml"
fi
# Keys and source passwords live there: readable by the service group only.
if [ -z "$DESTDIR" ]; then
  chown root:"$USER_NAME" "$ETC" "$ETC/config.toml"
fi
chmod 0750 "$DESTDIR$ETC"
chmod 0640 "$DESTDIR$ETC/config.toml"

# The unit, with the node binary of this host.
mkdir -p "$DESTDIR$UNIT_DIR"
sed "s|^ExecStart=/usr/bin/node |ExecStart=$NODE |" systemd/audio-engine.service > "$DESTDIR$UNIT_DIR/audio-engine.service"
chmod 0644 "$DESTDIR$UNIT_DIR/audio-engine.service"
echo "install-service: installed $UNIT_DIR/audio-engine.service (node: $NODE)"

# linuxptp: ptp4l 3.1 makes its socket root:root 0660; the drop-in gives it our group at each start.
for ptp_unit in ptp4l@.service ptp4l.service; do
  mkdir -p "$DESTDIR$UNIT_DIR/$ptp_unit.d"
  install -m 0644 systemd/ptp4l.service.d/audio-engine.conf "$DESTDIR$UNIT_DIR/$ptp_unit.d/audio-engine.conf"
done
echo "install-service: installed the ptp4l drop-in in $UNIT_DIR/ptp4l@.service.d/ and ptp4l.service.d/"

if [ -n "$DESTDIR" ]; then
  echo "install-service: staged under $DESTDIR; no user, no systemctl"
  exit 0
fi
if [ ! -d /run/systemd/system ] || ! command -v systemctl >/dev/null; then
  echo "install-service: systemd is not running here; enable it later with: systemctl enable --now audio-engine"
  exit 0
fi
systemctl daemon-reload
systemctl enable audio-engine.service >/dev/null
# A ptp4l already running made its socket before the drop-in existed: its group is set once here
# (what the drop-in does at its next start), so neither ptp4l nor the clock is disturbed. Only a
# socket some process has bound (a stale file is replaced at ptp4l's next start anyway).
if [ -S /run/ptp4l ] && grep -qE ' (/var)?/run/ptp4l$' /proc/net/unix; then
  chgrp "$USER_NAME" /run/ptp4l
  echo "install-service: /run/ptp4l (a running ptp4l's socket) is now group $USER_NAME"
fi
if [ "$start" = 1 ]; then
  systemctl restart audio-engine.service
  systemctl --no-pager --lines=0 status audio-engine.service || true
fi
echo "install-service: done. Logs: journalctl -u audio-engine -f"
