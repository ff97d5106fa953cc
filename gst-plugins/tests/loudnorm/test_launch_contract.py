#!/usr/bin/env python3
"""The message contract as a TypeScript consumer sees it: run
`gst-launch-1.0 -m` with loudnorm, parse its stdout lines, check every
documented field, its type, that values are finite, the -120 floor on
silence, one message per interval plus one at EOS."""
import re
import subprocess
import sys

LAUNCH = sys.argv[1]
LINE = re.compile(r'^Got message #\d+ from element "([^"]+)" \(element\): loudnorm, (.*);$')
FIELD = re.compile(r'([a-z-]+)=\((guint64|double)\)([^,]+)')
UINT_FIELDS = ["timestamp", "stream-time", "running-time", "duration"]
DOUBLE_FIELDS = ["input-momentary", "input-short-term", "input-integrated",
                 "measured", "input-loudness-range", "input-true-peak", "gain",
                 "output-momentary", "output-short-term", "output-integrated",
                 "output-true-peak"]
failures = 0


def check(what, ok):
    global failures
    print(f"  {what}: {'ok' if ok else 'FAIL'}")
    if not ok:
        failures += 1


def run(src, seconds):
    buffers = seconds * 100
    cmd = [LAUNCH, "-m", *src.split(), "num-buffers=%d" % buffers, "samplesperbuffer=480", "!",
           "audio/x-raw,format=F32LE,rate=48000,channels=2", "!",
           "loudnorm", "interval=500000000", "!", "fakesink"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout
    msgs = []
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            fields = {k: (t, v) for k, t, v in FIELD.findall(m.group(2))}
            msgs.append(fields)
    return msgs


print("tone")
msgs = run("audiotestsrc wave=sine freq=1000 volume=0.1", 10)
check("1 message per 500 ms + 1 at EOS (%d)" % len(msgs), len(msgs) == 21)
for f in msgs:
    names = list(f.keys())
    if names != UINT_FIELDS + DOUBLE_FIELDS:
        check("fields in documented order: %s" % names, False)
        break
    for k in DOUBLE_FIELDS:
        v = float(f[k][1])
        if not (v == v and abs(v) < 1e300):
            check("finite %s" % k, False)
else:
    check("all fields present, in order, typed and finite", True)
last = msgs[-1]
check("input-integrated of a 1 kHz sine at -20 dBFS ~ -20 LUFS (%s)" % last["input-integrated"][1],
      abs(float(last["input-integrated"][1]) + 20.0) < 0.1)
check("output-integrated near -23 (%s)" % last["output-integrated"][1],
      abs(float(last["output-integrated"][1]) + 23.0) < 0.5)
check("timestamps step by the interval",
      all(abs(int(msgs[i + 1]["timestamp"][1]) - int(msgs[i]["timestamp"][1]) - 500000000) <= 1
          for i in range(len(msgs) - 2)))

check("measured = seconds of input since the start (%s)" % last["measured"][1],
      abs(float(last["measured"][1]) - 10.0) < 1e-9
      and abs(float(msgs[0]["measured"][1]) - 0.5) < 1e-9)

print("silence")
msgs = run("audiotestsrc wave=silence", 2)
last = msgs[-1]
for k in ["input-momentary", "input-short-term", "input-integrated", "input-true-peak",
          "output-momentary", "output-integrated", "output-true-peak"]:
    check("%s at the floor -120 (%s)" % (k, last[k][1]), float(last[k][1]) == -120.0)
check("input-loudness-range 0 (%s)" % last["input-loudness-range"][1],
      float(last["input-loudness-range"][1]) == 0.0)

print("PASSED" if failures == 0 else "FAILED (%d failures)" % failures)
sys.exit(1 if failures else 0)
