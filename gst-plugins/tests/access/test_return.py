#!/usr/bin/env python3
"""srtaccess reconnect-ms through gst-launch-1.0 -m, with real SRT callers on
loopback and the audio judged after decoding:

  * a caller killed with SIGKILL (no SRT shutdown) and a new one calling
    0.2, 1 and 3 s later (ffmpeg, which calls once; srt-live-transmit fed by
    ffmpeg; a GStreamer srtsink): the new caller's tone is decoded from the
    listener, which srtsrc kept open;
  * a caller calling while the connected one delivers is refused (srtaccess
    event=rejected, busy=true, its address) and the connected caller's tone
    goes on without a hole.

Each new caller sends another tone than the one before (1000 / 440 Hz), so
the output says whose audio it is. Prints, per case, the time from the
new caller's first packet (the element's "first-packet" message) and from its
"accepted" message to the new tone in the output, and per case how many were
decoded within 1 s of the first packet (not asserted: a timing).

usage: test_return.py GST_LAUNCH [--rounds N]
(RETURN_CASES=ffmpeg:0.2,srtsink:1 in the environment: only these kind:gap cases)
Exit 77 (skipped) without ffmpeg, srt-live-transmit or srtsrc."""
import math
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stats"))
from pslaunch import Checker, free_udp_port  # noqa: E402

LAUNCH = sys.argv[1]
ROUNDS = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 1
RATE = 48000
BLOCK = 480  # 10 ms
ffmpeg = shutil.which("ffmpeg")
slt = shutil.which("srt-live-transmit")
inspect = os.path.join(os.path.dirname(LAUNCH), "gst-inspect-1.0")
if not ffmpeg or not slt or subprocess.run([inspect, "--exists", "srtsrc"]).returncode != 0:
    print("skipped: needs ffmpeg, srt-live-transmit and srtsrc")
    sys.exit(77)

check = Checker()
workdir = tempfile.mkdtemp(prefix="srtaccess-return-")
out_path = os.path.join(workdir, "out.s16")
port = free_udp_port()
desc = (
    "srtsrc name=src mode=listener localaddress=127.0.0.1 localport=%d latency=120 "
    "poll-timeout=100 keep-listening=true wait-for-connection=true ! typefind ! tsdemux ! "
    "decodebin ! audioconvert ! audioresample ! audio/x-raw,format=S16LE,channels=1,rate=48000 ! "
    "filesink buffer-mode=unbuffered location=%s sync=false async=false   "
    "srtaccess name=access source=src reconnect-ms=500" % (port, out_path))
T0 = time.monotonic()
lines = []
lock = threading.Lock()
# RETURN_STDERR=path: the listener's stderr (with GST_DEBUG) kept there
stderr_path = os.environ.get("RETURN_STDERR")
launch = subprocess.Popen([LAUNCH, "-m", "--", *desc.split()], stdout=subprocess.PIPE,
                          stderr=open(stderr_path, "w") if stderr_path else subprocess.DEVNULL, text=True)


def read_stdout():
    for line in launch.stdout:
        with lock:
            lines.append((time.monotonic(), line.rstrip("\n")))


threading.Thread(target=read_stdout, daemon=True).start()
procs = []


def tone_power(samples, freq):
    w = 2 * math.cos(2 * math.pi * freq / RATE)
    s1 = s2 = 0.0
    for x in samples:
        s1, s2 = x + w * s1 - s2, s1
    return s1 * s1 + s2 * s2 - w * s1 * s2


def last_block():
    """The newest 10 ms of decoded audio and its tone (1000, 440, or None)."""
    try:
        size = os.path.getsize(out_path)
    except OSError:
        return 0, None
    if size < BLOCK * 2:
        return size, None
    with open(out_path, "rb") as f:
        f.seek((size // 2 - BLOCK) * 2)
        data = f.read(BLOCK * 2)
    samples = struct.unpack("<%dh" % BLOCK, data)
    p1, p4 = tone_power(samples, 1000), tone_power(samples, 440)
    rms = math.sqrt(sum(x * x for x in samples) / BLOCK)
    if rms < 300:
        return size, None
    return size, 1000 if p1 > 10 * p4 else 440 if p4 > 10 * p1 else None


def wait_tone(freq, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if last_block()[1] == freq:
            return time.monotonic()
        time.sleep(0.01)
    return None


def ffmpeg_args(freq, target):
    return [ffmpeg, "-nostdin", "-loglevel", "error", "-re", "-f", "lavfi",
            "-i", "sine=f=%d:r=48000" % freq, "-c:a", "aac", "-flush_packets", "1", "-f", "mpegts", target]


def start_caller(kind, freq):
    url = "srt://127.0.0.1:%d?mode=caller&latency=120000&pkt_size=1316" % port
    if kind == "ffmpeg":
        group = [subprocess.Popen(ffmpeg_args(freq, url), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)]
    elif kind == "srt-live-transmit":
        enc = subprocess.Popen(ffmpeg_args(freq, "-"), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        group = [subprocess.Popen([slt, "-q", "file://con", "srt://127.0.0.1:%d?latency=120" % port],
                                  stdin=enc.stdout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), enc]
        enc.stdout.close()
    else:
        # the audio on PID 256 as ffmpeg puts it: the listener's tsdemux follows a new
        # caller of the same layout, not another one
        group = [subprocess.Popen([LAUNCH, "-q", "audiotestsrc", "is-live=true", "freq=%d" % freq, "!",
                                   "audioconvert", "!", "avenc_aac", "!", "aacparse", "!", "mux.sink_256",
                                   "mpegtsmux", "name=mux", "!", "srtsink",
                                   "uri=srt://127.0.0.1:%d?mode=caller" % port, "latency=120"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    procs.extend(group)
    return group


def kill(group):
    for p in group:
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        p.wait()


def accepted_since(t0):
    with lock:
        for at, line in lines:
            if at >= t0 and "srtaccess, event=(string)accepted" in line:
                return at
    return None


def first_packet_since(t0):
    """When the element said the new caller's first packet left srtsrc."""
    with lock:
        for at, line in lines:
            if at >= t0 and "srtaccess, event=(string)first-packet" in line:
                return at
    return None


def rejected_since(t0):
    with lock:
        return [line for at, line in lines if at >= t0 and "srtaccess, event=(string)rejected" in line]


times = {}
try:
    freq = 1000
    current = start_caller("ffmpeg", freq)
    check("the first caller's %d Hz is decoded" % freq, wait_tone(freq, 15) is not None)
    cases = [("ffmpeg", 0.2), ("ffmpeg", 1.0), ("ffmpeg", 3.0), ("srt-live-transmit", 1.0), ("srtsink", 1.0)]
    if os.environ.get("RETURN_CASES"):
        cases = [(k, float(g)) for k, g in (c.split(":") for c in os.environ["RETURN_CASES"].split(","))]
    for _ in range(ROUNDS):
        for kind, gap in cases:
            time.sleep(1.0)
            t_kill = time.monotonic()
            kill(current)
            time.sleep(gap)
            freq = 440 if freq == 1000 else 1000
            t0 = time.monotonic()
            current = start_caller(kind, freq)
            heard = wait_tone(freq, 8)
            accepted = accepted_since(t0)
            first = first_packet_since(t0)
            if heard and first is None:  # its line may still be on its way through the pipe
                time.sleep(0.5)
                first = first_packet_since(t0)
            took = "%.2f s after its first packet, %.2f s after its accepted message" % (
                heard - first, heard - accepted) if heard and accepted and first else "never"
            key = "%s %.1f s" % (kind, gap)
            times.setdefault(key, []).append(heard - first if heard and accepted and first else None)
            if stderr_path:
                print("    at %.2f s: killed at %.2f, called at %.2f, accepted at %s; fds %d, threads %d" % (
                    time.monotonic() - T0, t_kill - T0, t0 - T0, "%.2f" % (accepted - T0) if accepted else "-",
                    len(os.listdir("/proc/%d/fd" % launch.pid)), len(os.listdir("/proc/%d/task" % launch.pid))),
                    flush=True)
            check("%s killed, a new %s caller %.1f s later: its %d Hz decoded (%s)"
                  % ("previous caller", kind, gap, freq, took), heard is not None and accepted is not None)

    for key, took in times.items():
        decoded = [x for x in took if x is not None]
        print("  %s: %d of %d decoded, %d within 1 s of the first packet%s" % (
            key, len(decoded), len(took), sum(1 for x in decoded if x <= 1.0),
            " (%.2f-%.2f s)" % (min(decoded), max(decoded)) if decoded else ""), flush=True)

    # a second caller while the first delivers: refused, the first goes on
    time.sleep(1.0)
    size0 = last_block()[0]
    t0 = time.monotonic()
    intruder = start_caller("ffmpeg", 440 if freq == 1000 else 1000)
    # until the intruder has been refused (ffmpeg may take seconds to start on a loaded
    # host), then 1 s more; bounded at 15 s
    holes = looks = 0
    end = time.monotonic() + 15
    settled = None
    while time.monotonic() < end and (settled is None or time.monotonic() < settled):
        if settled is None and rejected_since(t0):
            settled = time.monotonic() + 1
        looks += 1
        if last_block()[1] != freq:
            holes += 1
        time.sleep(0.02)
    refused = rejected_since(t0)
    check("a caller while the first delivers is refused with its address and busy=true (%s)"
          % (refused[0][-120:] if refused else "no message"),
          len(refused) >= 1 and "busy=(boolean)true" in refused[0] and "peer=(string)127.0.0.1:" in refused[0])
    check("the connected caller's %d Hz went on (%d of %d looks at the newest 10 ms were not it)"
          % (freq, holes, looks), holes == 0 and last_block()[0] > size0)
    kill(intruder)
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    launch.send_signal(signal.SIGINT)
    try:
        launch.wait(10)
    except subprocess.TimeoutExpired:
        launch.kill()
        launch.wait()
    shutil.rmtree(workdir, ignore_errors=True)
    if check.failures:
        print("\n".join(line for _, line in lines if "srtaccess," in line or "connection-removed" in line))
    if os.environ.get("RETURN_STDERR"):
        print("\n".join("%.3f %s" % (at - T0, line) for at, line in lines if "srtaccess," in line))
sys.exit(1 if check.failures else 0)
