#!/usr/bin/env python3
"""chaindecode with a chained Ogg Vorbis stream on stdin (fdsrc, push mode, as
the engine feeds it): both chains play, the time line downstream is one
continuous segment, and the end of the input ends the stream. decodebin alone
stops at the second chain (not-linked): the reason for the element."""
import os
import re
import subprocess
import sys
import tempfile

LAUNCH = sys.argv[1]
SECONDS = 2.0
failures = []


def check(what, ok):
    print(("ok     " if ok else "FAILED ") + what)
    if not ok:
        failures.append(what)


def encode(path, freq):
    desc = ("audiotestsrc num-buffers=%d samplesperbuffer=480 freq=%d volume=0.5 ! "
            "audio/x-raw,rate=48000,channels=2 ! audioconvert ! vorbisenc quality=0.5 ! "
            "oggmux ! filesink location=%s" % (int(SECONDS * 100), freq, path))
    subprocess.run([LAUNCH, "-q", "--", *desc.split()], check=True, timeout=60)


def run(decoder, data):
    # identity prints every buffer's pts and duration (-v): the time line downstream
    desc = ("fdsrc fd=0 ! %s ! audioconvert ! audio/x-raw,format=S16LE,rate=48000,channels=2 ! "
            "identity silent=false ! fakesink sync=false" % decoder)
    proc = subprocess.run([LAUNCH, "-m", "-v", "--", *desc.split()], input=data,
                          capture_output=True, timeout=60)
    return proc.returncode, proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")


with tempfile.TemporaryDirectory() as tmp:
    first, second = os.path.join(tmp, "a.ogg"), os.path.join(tmp, "b.ogg")
    encode(first, 440)
    encode(second, 880)
    with open(first, "rb") as a, open(second, "rb") as b:
        chained = a.read() + b.read()

code, out = run("decodebin", chained)
check("decodebin alone stops at the second chain (not-linked)", code != 0 and "not-linked" in out)

code, out = run("chaindecode", chained)
check("chaindecode ends cleanly at the end of the input (exit 0)", code == 0)
check("chaindecode posts chain=1 and chain=2",
      "chain=(uint)1" in out and "chain=(uint)2" in out)
stamps = [(int(h) * 3600 + int(m) * 60 + float(s), int(dh) * 3600 + int(dm) * 60 + float(ds))
          for h, m, s, dh, dm, ds in re.findall(
              r"pts: (\d+):(\d+):([\d.]+), duration: (\d+):(\d+):([\d.]+)", out)]
check("buffers came out (%d)" % len(stamps), len(stamps) > 50)
segments = re.findall(r"identity0:sink\) E \(type: segment", out)
check("one segment downstream (%d)" % len(segments), len(segments) == 1)
steps = [(i, b[0] - (a[0] + a[1])) for i, (a, b) in enumerate(zip(stamps, stamps[1:]))]
gaps = [(i, d) for i, d in steps if d > 0.001]
check("the time line has no gap over 1 ms (%s)" % gaps[:3], not gaps)
# The second chain starts where its own time says, which may overlap the first
# chain's last packet (Vorbis padding, ~17 ms here); a larger step back would be
# a restart of the time line.
overlaps = [(i, d) for i, d in steps if d < -0.001]
check("at most one overlap, under 200 ms (%s)" % overlaps, len(overlaps) <= 1 and all(d > -0.2 for _, d in overlaps))
total = stamps[-1][0] + stamps[-1][1] if stamps else 0
check("both chains' audio came out: %.3f s of %.1f s" % (total, 2 * SECONDS),
      abs(total - 2 * SECONDS) < 0.1)

if failures:
    print("%d failed" % len(failures))
    sys.exit(1)
