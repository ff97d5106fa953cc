#!/usr/bin/env python3
"""clockbridge's `level` message against GStreamer's level element, in one real
gst-launch-1.0 process: the element right after the bridge sees exactly the
bridge's output, so both messages of each interval must agree.

  audiotestsrc (pink noise, a sine or silence) ! clockbridge meter-interval=100 ms
      pace-input=true ! level interval=100 ms ! fakesink sync=true

For mono, stereo and 6 channels: at least 15 intervals, each reported by both
with the same endtime, timestamp, duration, and the same rms and peak per
channel (within 1e-6 dB; both print 17 digits); level's one more at EOS is the
part of an interval the stream ended in (shorter than 100 ms, or empty with NaN
figures), which the bridge does not post: its output ends with the stream. Silence reads -700 / -350 dB in
both. Without meter-interval the bridge posts no `level` message, and a
meter-interval under 10 ms fails the start with an error that names it."""
import re
import subprocess
import sys

LAUNCH = sys.argv[1]
failures = []
MESSAGE = re.compile(r'^Got message #\d+ from element "(bridge|level)" \(element\): level, (.*);$')


def check(what, ok):
    print(("ok     " if ok else "FAILED ") + what, flush=True)
    if not ok:
        failures.append(what)


def field(body, name):
    m = re.search(r"\b%s=\((?:guint64|GValueArray)\)(< [^>]* >|\d+)" % re.escape(name), body)
    if m is None:
        return None
    v = m.group(1)
    if v.startswith("<"):
        return [float(x) for x in v.strip("<> ").split(", ")]
    return int(v)


def run(wave, channels, meter="meter-interval=100000000", extra=()):
    desc = ("audiotestsrc wave=%s volume=0.4 is-live=false samplesperbuffer=960 num-buffers=100 "
            "! audio/x-raw,format=F32LE,layout=interleaved,rate=48000,channels=%d "
            "! clockbridge name=bridge channels=%d pace-input=true %s "
            "! level name=level interval=100000000 ! fakesink sync=true" % (wave, channels, channels, meter))
    p = subprocess.run([LAUNCH, "-m", *extra, "--", *desc.split()], capture_output=True, text=True, timeout=60)
    messages = {"bridge": [], "level": []}
    for line in p.stdout.splitlines():
        m = MESSAGE.match(line)
        if m:
            body = m.group(2)
            messages[m.group(1)].append({k: field(body, k) for k in ("endtime", "timestamp", "duration", "rms", "peak")})
    return p, messages


def compare(wave, channels):
    p, msgs = run(wave, channels)
    ours, theirs = msgs["bridge"], msgs["level"]
    partial = [m for m in theirs if m["duration"] != 100000000]
    check("%s, %d ch: level's only partial interval is its last, at EOS (%d partial)" % (wave, channels, len(partial)),
          len(partial) <= 1 and (not partial or theirs[-1] is partial[0]))
    theirs = [m for m in theirs if m["duration"] == 100000000]
    check("%s, %d ch: exit 0 (%s)" % (wave, channels, p.stderr.strip()[-200:]), p.returncode == 0)
    check("%s, %d ch: %d intervals from the bridge, %d from level (at least 15, as many)" % (wave, channels, len(ours), len(theirs)),
          len(ours) >= 15 and len(ours) == len(theirs))
    times = all(a[k] == b[k] for a, b in zip(ours, theirs) for k in ("endtime", "timestamp", "duration"))
    check("%s, %d ch: the same endtime, timestamp and duration in every interval" % (wave, channels), times)
    worst = 0.0
    shape = True
    for a, b in zip(ours, theirs):
        for k in ("rms", "peak"):
            if a[k] is None or b[k] is None or len(a[k]) != channels or len(b[k]) != channels:
                shape = False
                continue
            worst = max([worst] + [abs(x - y) for x, y in zip(a[k], b[k])])
    check("%s, %d ch: rms and peak of every channel, as level's (largest difference %.3g dB)" % (wave, channels, worst),
          shape and worst <= 1e-6)
    return ours


def main():
    for channels in (1, 2, 6):
        compare("pink-noise", channels)
    compare("sine", 2)
    silent = compare("silence", 2)
    check("silence: -700 dB rms, -350 dB peak, as level says",
          len(silent) > 0 and all(m["rms"] == [-700.0, -700.0] and m["peak"] == [-350.0, -350.0] for m in silent))
    p, msgs = run("sine", 2, meter="")
    check("no meter-interval: no level message from the bridge (level: %d)" % len(msgs["level"]),
          p.returncode == 0 and msgs["bridge"] == [] and len(msgs["level"]) >= 15)
    p, _ = run("sine", 2, meter="meter-interval=5000000")
    check("meter-interval=5 ms: the start fails and names it (exit %d)" % p.returncode,
          p.returncode != 0 and "meter-interval" in p.stdout + p.stderr)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)


main()
