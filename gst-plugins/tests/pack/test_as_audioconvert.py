#!/usr/bin/env python3
"""l24pack through gst-launch-1.0: for the same F32LE input, its S24BE bytes
equal audioconvert's, and so do the caps it writes (rate, channels, channel
mask). The input: 2 s of seeded random samples over +-1.5 (every mantissa,
a third of them clipped) and the edge values (a positive NaN, infinities),
mono, stereo and 8 channels."""
import os
import random
import re
import struct
import subprocess
import sys
import tempfile

LAUNCH = sys.argv[1]
failures = []


def check(what, ok):
    print(("ok     " if ok else "FAILED ") + what)
    if not ok:
        failures.append(what)


def convert(converter, src, dst, channels):
    desc = ("filesrc location=%s ! rawaudioparse format=pcm pcm-format=f32le "
            "sample-rate=48000 num-channels=%d ! %s ! audio/x-raw,format=S24BE ! "
            "filesink location=%s" % (src, channels, converter, dst))
    run = subprocess.run([LAUNCH, "-v", "-e", "--", *desc.split()], capture_output=True,
                         text=True, timeout=60)
    if run.returncode != 0:
        raise RuntimeError("%s: %s" % (converter, run.stderr.strip()))
    # the caps on the filesink's pad, the last -v line that names it
    caps = [m.group(1) for m in re.finditer(r"filesink\d*\.GstPad:sink: caps = (.*)", run.stdout)]
    # its fields, in any order
    return sorted(caps[-1].split(", ")) if caps else None


def main():
    rng = random.Random(26)
    edges = [0.0, 1.0, -1.0, 0.5, -0.5, 2.0 ** -24, -(2.0 ** -24), 1.5 * 2.0 ** -23,
             -1.5 * 2.0 ** -23, 1.0 - 2.0 ** -24, 1.0 + 2.0 ** -23, -1.0 - 2.0 ** -23,
             float("nan"), float("inf"), float("-inf")]
    with tempfile.TemporaryDirectory() as tmp:
        for channels in (1, 2, 8):
            frames = 96000
            samples = edges + [rng.uniform(-1.5, 1.5) for _ in range(frames * channels - len(edges))]
            src = os.path.join(tmp, "in-%d.f32" % channels)
            with open(src, "wb") as f:
                f.write(struct.pack("<%df" % len(samples), *samples))
            ours = os.path.join(tmp, "l24pack-%d.s24" % channels)
            theirs = os.path.join(tmp, "audioconvert-%d.s24" % channels)
            ours_caps = convert("l24pack", src, ours, channels)
            theirs_caps = convert("audioconvert", src, theirs, channels)
            a = open(ours, "rb").read()
            b = open(theirs, "rb").read()
            check("%d channel(s): %d bytes, as many as audioconvert's (%d)" % (channels, len(a), len(b)),
                  len(a) == len(b) == 3 * len(samples))
            diff = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), None)
            if diff is not None:
                i = diff - diff % 3
                print("sample %d: in %r, ours %s, audioconvert %s" % (i // 3, samples[i // 3], a[i:i + 3].hex(), b[i:i + 3].hex()))
            check("%d channel(s): byte for byte audioconvert's (first difference: %s)" % (channels, diff),
                  diff is None and len(a) == len(b))
            check("%d channel(s): the same caps (%s; audioconvert: %s)" % (channels, ours_caps, theirs_caps),
                  ours_caps is not None and ours_caps == theirs_caps)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)


main()
