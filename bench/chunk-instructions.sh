#!/bin/sh
# Instructions the clock bridge's output thread spends per 4 ms chunk, element by element: a
# load-independent figure (valgrind callgrind counts instructions; CPU time on a shared machine
# moves by more than a cut saves). The graph after the bridge is the compiler's for the cost
# bench's shape (the bridge's input meter at 100 ms, loudnorm -23, 3-band EQ, l24pack, rtpL24pay
# 1 ms, rtpbatch 4, udpsink; OUTCONVERT=audioconvert puts back the converter the compiler wrote
# before l24pack; METER=level puts back GStreamer's level after the bridge, the graph before the
# bridge metered its output, which a build older than meter-interval needs);
# the input is audiotestsrc pink noise, paced by the bridge (pace-input), instead of SRT + AAC.
# Under callgrind the process runs ~50x slower than real time, so every chunk is late: the
# output loop never sleeps and the figure is the user-space work of a chunk (no kernel time: not
# the send, not the sleep). Counters are zeroed after WARMUP s (start-up and caps negotiation
# left out), read at the end. CHUNK_MS (whole ms, 1-20; default 4, the compiler's for
# rtp_packets_per_send 4) sets the bridge's chunk: the graph after it is unchanged (rtpbatch
# still lists 4 packets), so the figures per ms of audio show what the per-chunk work is.
#
#   [OUTCONVERT=audioconvert] [METER=level] [CHUNK_MS=N] bench/chunk-instructions.sh [PLUGIN_DIR ...]  (default gst-plugins/build)
#
# Prints, per plugin build: Ir per chunk of the whole output loop and of its parts, and the
# whole loop's Ir per ms of audio. The
# bridge's output thread asks SCHED_FIFO; it runs without CAP_SYS_NICE here (setpriv) so that
# RLIMIT_RTTIME does not end a thread that never blocks under valgrind.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WARMUP=${WARMUP:-14}
WINDOW=${WINDOW:-30}
OUTCONVERT=${OUTCONVERT:-l24pack}
case $OUTCONVERT in l24pack | audioconvert) ;; *) echo "OUTCONVERT: l24pack or audioconvert" >&2; exit 2 ;; esac
METER=${METER:-bridge}
case $METER in
  bridge) BRIDGE_METER=meter-interval=100000000 LEVEL_ELEMENT= ;;
  level) BRIDGE_METER= LEVEL_ELEMENT="level name=level interval=100000000 post-messages=true !" ;;
  *) echo "METER: bridge or level" >&2; exit 2 ;;
esac
CHUNK_MS=${CHUNK_MS:-4}
case $CHUNK_MS in [1-9] | 1[0-9] | 20) ;; *) echo "CHUNK_MS: whole ms, 1-20" >&2; exit 2 ;; esac
[ $# -gt 0 ] || set -- "$ROOT/gst-plugins/build"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
i=0
for dir in "$@"; do
  i=$((i + 1))
  GST_PLUGIN_PATH=$dir GST_REGISTRY=$TMP/reg$i.bin setsid timeout -s INT $((WARMUP + WINDOW + 2)) \
    setpriv --bounding-set -sys_nice valgrind --tool=callgrind --callgrind-out-file="$TMP/cg$i.out" --dump-instr=no \
    gst-launch-1.0 -q -e -- audiotestsrc wave=pink-noise is-live=false samplesperbuffer=1024 \
    ! audio/x-raw,format=F32LE,layout=interleaved,rate=48000,channels=2 \
    ! clockbridge name=bridge clock-source=tai jitter=50000000 chunk=${CHUNK_MS}000000 interval=1000000000 $BRIDGE_METER channels=2 pace-input=true \
    ! $LEVEL_ELEMENT loudnorm name=step0 target=-23 true-peak=-1 interval=100000000 \
    ! parametriceq name=step1 bands="100:4:1,1000:-3:2.5,8000:2:1" \
    ! "$OUTCONVERT" name=outconvert ! rtpL24pay name=pay pt=96 min-ptime=1000000 max-ptime=1000000 \
    ! rtpbatch name=batch packets=4 media-clock=true \
    ! udpsink name=out host=127.0.0.1 port=9 sync=true processing-deadline=0 async=false \
    < /dev/null > /dev/null 2> "$TMP/cg$i.err" &
  echo $! > "$TMP/pid$i"
done
sleep "$WARMUP"
i=0
for dir in "$@"; do
  i=$((i + 1))
  pgrep -f "callgrind-out-file=$TMP/cg$i.out" | xargs -r -n1 callgrind_control -z > /dev/null 2>&1
done
wait
i=0
for dir in "$@"; do
  i=$((i + 1))
  f=$TMP/cg$i.out
  callgrind_annotate --inclusive=yes --tree=calling "$f" 2> /dev/null > "$TMP/tree$i"
  chunks=$(grep -E '>.*bridge.c:clock_bridge_read \(' "$TMP/tree$i" | head -1 | sed 's/.*(\([0-9,]*\)x).*/\1/' | tr -d ,)
  echo "== $dir: $chunks chunks of $CHUNK_MS ms after the warm-up; Ir per chunk, inclusive"
  for fn in gstclockbridge.c:gst_clock_bridge_loop bridge.c:clock_bridge_read failover.c:failover_chunk gstloudnorm.c:gst_loudnorm_transform_ip \
    gstparametriceq.c:gst_parametric_eq_transform_ip gst_audio_converter_samples gstl24pack.c:gst_l24_pack_transform gst_rtp_base_audio_payload_flush \
    gstrtpbatch.c:gst_rtp_batch_chain; do
    ir=$(grep -E "^ *[0-9,]+ \([ 0-9.]+%\)  \*  .*$fn \[" "$TMP/tree$i" | head -1 | awk '{gsub(",","",$1); print $1}')
    [ -n "$ir" ] && [ -n "$chunks" ] && printf '%8d  %s\n' $((ir / chunks)) "$fn"
    [ -n "$ir" ] && [ -n "$chunks" ] && [ "$fn" = gstclockbridge.c:gst_clock_bridge_loop ] && loop=$((ir / chunks / CHUNK_MS))
  done
  [ -n "${loop:-}" ] && printf '%8d  the whole loop per ms of audio\n' "$loop"
  loop=
done
