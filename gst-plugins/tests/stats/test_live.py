#!/usr/bin/env python3
"""pipelinestats in a live pipeline without SRT, through gst-launch-1.0 -m:
messages at the interval (its own timer), output-packets growing, srt fields
absent (source names a missing sibling), no other fields (no queue reading),
an empty name leaves the fields out, and the process ends cleanly on EOS."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pslaunch import Checker, parse, SRT_FIELDS, OUTPUT_FIELDS  # noqa: E402

LAUNCH = sys.argv[1]
check = Checker()


def run(stats_args, seconds, extra=None):
    desc = ("audiotestsrc is-live=true num-buffers=%d samplesperbuffer=480 ! "
            "rtpL24pay name=pay ! fakesink name=out  "
            "pipelinestats name=stats interval=100000000 %s" % (seconds * 100, stats_args))
    p = subprocess.run([LAUNCH, "-m", "-f", "-e", "--", *desc.split()],
                       capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


print("live pipeline, 3 s, interval 100 ms, source=nonexistent")
rc, out, err = run("source=nonexistent", 3)
check("gst-launch exit 0 (%d)" % rc, rc == 0)
msgs = [f for _, f in parse(out, "stats")]
# 3 s of audio plus start-up and the drain at EOS
check("~30 messages in 3 s (%d)" % len(msgs), 27 <= len(msgs) <= 36)
check("seq counts 0, 1, 2, ...", [f.get("seq") for f in msgs] == list(range(len(msgs))))
rts = [f.get("running-time") for f in msgs]
check("running-time present", all(r is not None for r in rts))
if all(r is not None for r in rts) and len(rts) > 2:
    steps = [b - a for a, b in zip(rts, rts[1:])]
    mean = (rts[-1] - rts[0]) / (len(rts) - 1)
    # fixed schedule: a late wake-up (loaded machine) is caught up by the next tick
    check("mean running-time step 100 ms +- 1 ms (%.0f)" % mean, abs(mean - 100e6) < 1e6)
    check("every step 100 ms +- 75 ms (%s..%s)" % (min(steps), max(steps)),
          all(25_000_000 <= s <= 175_000_000 for s in steps))
check("srt fields absent", all(not (set(SRT_FIELDS) & set(f)) for f in msgs))
check("exactly seq, running-time and the output fields",
      all(set(f) == {"seq", "running-time", *OUTPUT_FIELDS} for f in msgs))
pk = [f.get("output-packets", 0) for f in msgs]
check("output-packets never decreases", all(b >= a for a, b in zip(pk, pk[1:])))
check("output-packets grows (%s -> %s)" % (pk[0] if pk else None, pk[-1] if pk else None),
      len(pk) > 2 and pk[-1] > pk[0] > 0)
# 10 ms buffers of 48 kHz stereo S16 become one RTP packet each at most MTU size;
# 3 s -> at least 300 packets once the EOS drained
check("output-packets reaches >= 290 (%s)" % (pk[-1] if pk else None), bool(pk) and pk[-1] >= 290)
by = [f.get("output-bytes", 0) for f in msgs]
check("output-bytes > 12 * output-packets (RTP header)",
      bool(by) and by[-1] > 12 * pk[-1])

# (in a gst-launch description an empty string must be written name="")
print("empty names and missing siblings leave their fields out")
rc, out, err = run('source="" payloader=nopay sink=nosink', 1)
msgs = [f for _, f in parse(out, "stats")]
check("messages posted (%d)" % len(msgs), len(msgs) >= 8)
check("only seq and running-time",
      all(set(f) == {"seq", "running-time"} for f in msgs))

print("no payloader: counts on the sink's sink pad")
rc, out, err = run('payloader=""', 1)
msgs = [f for _, f in parse(out, "stats")]
check("output-packets from out:sink grows",
      len(msgs) > 2 and msgs[-1].get("output-packets", 0) > msgs[0].get("output-packets", 0) > 0)

print("no sink: counts on the payloader's src pad")
rc, out, err = run('sink=""', 1)
msgs = [f for _, f in parse(out, "stats")]
check("output-packets from pay:src grows",
      len(msgs) > 2 and msgs[-1].get("output-packets", 0) > msgs[0].get("output-packets", 0) > 0)

print("FAILED: %d" % check.failures if check.failures else "all ok")
sys.exit(1 if check.failures else 0)
