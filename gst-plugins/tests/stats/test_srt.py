#!/usr/bin/env python3
"""pipelinestats in an SRT description shaped like the engine's, with a real
ffmpeg SRT caller on loopback, through gst-launch-1.0 -m -f -e:

  * messages at the interval before any caller connects (srt-connected=false,
    counters 0): the element's own timer, no data needed;
  * srt-connected=true with srt-packets-received growing while ffmpeg sends;
  * output-packets growing, and matching the RTP packets that arrive;
  * gst-launch ends by itself (keep-listening=false) with exit code 0.

usage: test_srt.py GST_LAUNCH [--capture FILE]   (FILE: the raw stdout)
Exit 77 (skipped) without ffmpeg or srtsrc."""
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pslaunch import Checker, parse, free_udp_port, SRT_FIELDS, OUTPUT_FIELDS  # noqa: E402

LAUNCH = sys.argv[1]
CAPTURE = sys.argv[sys.argv.index("--capture") + 1] if "--capture" in sys.argv else None
INTERVAL_S = 1.0
SEND_S = 4

ffmpeg = shutil.which("ffmpeg")
inspect = os.path.join(os.path.dirname(LAUNCH), "gst-inspect-1.0")
if not ffmpeg or subprocess.run([inspect, "--exists", "srtsrc"]).returncode != 0:
    print("skipped: needs ffmpeg and srtsrc")
    sys.exit(77)

check = Checker()
srt_port = free_udp_port()

# RTP receiver: bound before the pipeline starts, counts datagrams
rtp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rtp.bind(("127.0.0.1", 0))
rtp.settimeout(0.2)
rtp_port = rtp.getsockname()[1]
rtp_count = 0
rtp_stop = threading.Event()


def rtp_loop():
    global rtp_count
    while not rtp_stop.is_set():
        try:
            rtp.recv(65536)
            rtp_count += 1
        except socket.timeout:
            pass


# the engine's SRT graph without processing steps, a queue where the engine has its clock
# bridge (pipelinestats reads no queue), loopback only
desc = (
    "srtsrc name=src mode=listener localaddress=127.0.0.1 localport=%d latency=120 "
    "poll-timeout=100 keep-listening=false wait-for-connection=true ! decodebin name=decode ! "
    "audioconvert name=inconvert ! audioresample name=resample ! "
    "audio/x-raw,format=F32LE,layout=interleaved,rate=48000,channels=2 ! "
    "queue max-size-time=200000000 max-size-buffers=0 max-size-bytes=0 ! "
    "level name=level interval=1000000000 ! audioconvert name=outconvert ! "
    "rtpL24pay name=pay pt=96 min-ptime=1000000 max-ptime=1000000 ! "
    "udpsink name=out host=127.0.0.1 port=%d ttl-mc=16 auto-multicast=true sync=true async=false   "
    "pipelinestats name=stats interval=1000000000 source=src payloader=pay sink=out"
    % (srt_port, rtp_port))

lines = []          # (monotonic time, line)
lock = threading.Lock()
threading.Thread(target=rtp_loop, daemon=True).start()
t0 = time.monotonic()
gst = subprocess.Popen([LAUNCH, "-m", "-f", "-e", "--", *desc.split()],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def reader():
    for line in gst.stdout:
        with lock:
            lines.append((time.monotonic(), line.rstrip("\n")))


rd = threading.Thread(target=reader, daemon=True)
rd.start()


def stats_so_far():
    with lock:
        text = "\n".join(l for _, l in lines)
    return [f for _, f in parse(text, "stats")]


# wait for >= 2 messages before connecting
deadline = time.monotonic() + 10
while len(stats_so_far()) < 2 and time.monotonic() < deadline and gst.poll() is None:
    time.sleep(0.05)
before = stats_so_far()
t_caller = time.monotonic()
ff = subprocess.run([ffmpeg, "-nostdin", "-loglevel", "error", "-re", "-f", "lavfi",
                     "-i", "sine=f=1000:r=48000:d=%d" % SEND_S, "-ac", "2", "-c:a", "aac",
                     "-f", "mpegts", "srt://127.0.0.1:%d?mode=caller" % srt_port],
                    capture_output=True, text=True, timeout=60)
t_caller_end = time.monotonic()
check("ffmpeg caller exit 0 (%d %s)" % (ff.returncode, ff.stderr.strip()[-200:]), ff.returncode == 0)

# keep-listening=false: the caller leaving ends the stream, gst-launch -e stops by itself
try:
    rc = gst.wait(timeout=15)
except subprocess.TimeoutExpired:
    gst.send_signal(2)  # SIGINT: EOS with -e
    try:
        rc = gst.wait(timeout=10)
    except subprocess.TimeoutExpired:
        gst.kill()
        rc = gst.wait()
rd.join(timeout=5)
stderr = gst.stderr.read()
time.sleep(0.3)
rtp_stop.set()
rtp.close()

check("gst-launch exit 0 (%s)" % rc, rc == 0)
if stderr.strip():
    print("  gst-launch stderr: " + stderr.strip()[-500:])
text = "\n".join(l for _, l in lines)
if CAPTURE:
    with open(CAPTURE, "w") as f:
        f.write(text + "\n")
msgs = parse(text, "stats")
times = {}
with lock:
    for t, l in lines:
        times[l] = t
stamped = [(times[text.splitlines()[i]] - t0, f) for i, f in msgs]
print("  %d messages, caller %.1f..%.1f s" % (len(msgs), t_caller - t0, t_caller_end - t0))
for t, f in stamped:
    print("   %5.2f s seq=%s connected=%s received=%s output=%s" % (
        t, f.get("seq"), f.get("srt-connected"), f.get("srt-packets-received"),
        f.get("output-packets")))

allf = [f for _, f in stamped]
check("every message has exactly the srt, output, seq and running-time fields",
      all(set(SRT_FIELDS + OUTPUT_FIELDS + ["seq", "running-time"]) == set(f) for f in allf))
check("seq 0, 1, 2, ...", [f.get("seq") for f in allf] == list(range(len(allf))))
rts = [f["running-time"] for f in allf if "running-time" in f]
if len(rts) > 2:
    mean = (rts[-1] - rts[0]) / (len(rts) - 1)
    check("mean running-time step 1 s +- 10 ms (%.0f)" % mean, abs(mean - 1e9) < 1e7)

pre = [f for t, f in stamped if t < t_caller - t0]
check(">= 2 messages before the caller (%d)" % len(pre), len(pre) >= 2)
check("before: srt-connected=false, counters 0, output 0",
      bool(pre) and all(f.get("srt-connected") is False and f.get("srt-packets-received") == 0
                        and f.get("srt-bytes-received") == 0 and f.get("output-packets") == 0
                        for f in pre))

connected = [f for f in allf if f.get("srt-connected")]
# On a busy host a message can fall between the handshake and the first data packet (measured:
# received [0, 15, 33, 51], rate 0 in the first): judge from the first packet received on.
first = next((i for i, f in enumerate(connected) if f.get("srt-packets-received", 0) > 0), len(connected))
conn = connected[first:]
check(">= 3 messages with srt-connected=true and data (%d)" % len(conn), len(conn) >= 3)
rx = [f["srt-packets-received"] for f in conn]
check("srt-packets-received grows while connected (%s)" % rx,
      len(rx) >= 3 and all(b > a for a, b in zip(rx, rx[1:])) and rx[0] > 0)
# mpegts over SRT: 1 to 7 TS packets of 188 bytes per SRT packet
check("188 * packets <= srt-bytes-received <= 1316 * packets",
      bool(conn) and all(188 * f["srt-packets-received"] <= f["srt-bytes-received"]
                         <= 1316 * f["srt-packets-received"] for f in conn))
check("srt-latency-ms = 120 while connected", all(f["srt-latency-ms"] == 120 for f in conn))
check("srt-rtt-ms >= 0, srt-receive-rate-mbps > 0 while connected",
      all(f["srt-rtt-ms"] >= 0 and f["srt-receive-rate-mbps"] > 0 for f in conn))
out = [f["output-packets"] for f in allf]
check("output-packets never decreases", all(b >= a for a, b in zip(out, out[1:])))
late = [f["output-packets"] for f in conn]
check("output-packets grows while connected (%s)" % late,
      len(late) >= 2 and late[-1] > late[0])
# min/max-ptime 1 ms: ~1000 packets per second of audio
check("output-packets of ~%d s of audio at 1 ms ptime (%d)" % (SEND_S, out[-1] if out else 0),
      bool(out) and out[-1] >= 1000 * (SEND_S - 2.5))
check("RTP packets received on loopback (%d) >= last output-packets (%d)"
      % (rtp_count, out[-1] if out else 0), bool(out) and rtp_count >= out[-1] > 0)
after = [f for f in allf[allf.index(conn[-1]) + 1:]] if conn else []
if after:
    check("after the caller left: srt-connected=false, counters 0",
          all(f["srt-connected"] is False and f["srt-packets-received"] == 0 for f in after))

print("FAILED: %d" % check.failures if check.failures else "all ok")
sys.exit(1 if check.failures else 0)
