#!/usr/bin/env python3
"""reset-measurement through the engine's control channel, as the engine
does it: a real `gst-launch-1.0 -m` child with `enginecontrol fd=N` on one
end of a socket pair, a live 1 kHz tone through `parametriceq name=eq !
loudnorm name=step0`, the loudnorm messages parsed from its stdout.  After
3 s at about -10.5 LUFS the tone drops 20 dB (`v1 1 set eq.bands=1000:-20:1`,
a -20 dB peak on the tone); 0.5 s later `v1 2 set
step0.reset-measurement=true` (exactly what the engine sends).  Both are
acknowledged ok; the next messages show `measured` restarting from ~0,
`input-integrated` at the floor until the first 400 ms block after the
reset, then re-measured at the quiet level (about -30.5 LUFS, where the
measurement without the reset would still read about -11), and the true
peak of the quiet tone."""
import math
import re
import selectors
import socket
import subprocess
import sys
import time

LAUNCH = sys.argv[1]
LINE = re.compile(r'^Got message #\d+ from element "([^"]+)" \(element\): (\w+), (.*);$')
FIELD = re.compile(r'([a-z-]+)=\((guint64|double|boolean|int|string)\)("[^"]*"|[^,]+)')
failures = 0


def check(what, ok):
    global failures
    print(f"  {what}: {'ok' if ok else 'FAIL'}")
    if not ok:
        failures += 1


engine, child = socket.socketpair()
cmd = [LAUNCH, "-m", "audiotestsrc", "is-live=true", "wave=sine", "freq=1000", "volume=0.3",
       "samplesperbuffer=480", "!", "audio/x-raw,format=F32LE,rate=48000,channels=2", "!",
       "parametriceq", "name=eq", "bands=1000:0:1", "!",
       "loudnorm", "name=step0", "interval=250000000", "!", "fakesink", "sync=true",
       "enginecontrol", "name=control", "fd=%d" % child.fileno()]
proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                        pass_fds=(child.fileno(),))
child.close()
sel = selectors.DefaultSelector()
sel.register(proc.stdout, selectors.EVENT_READ)


def messages(deadline):
    """(kind, fields) of each element message until the deadline (monotonic)."""
    while time.monotonic() < deadline:
        if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
            continue
        line = proc.stdout.readline()
        if not line:
            return
        m = LINE.match(line.rstrip("\n"))
        if m:
            yield m.group(2), {k: v for k, _, v in FIELD.findall(m.group(3))}


def ack(cmd_id, deadline):
    for kind, f in messages(deadline):
        if kind == "enginecontrol" and f.get("id") == str(cmd_id):
            return f
        if kind == "loudnorm":
            before.append(f)
    return None


try:
    before = []
    for kind, f in messages(time.monotonic() + 10):
        if kind == "loudnorm":
            before.append(f)
            if float(f["measured"]) >= 3.0:
                break
    check("3 s measured before the reset (%s)" % (before[-1]["measured"] if before else None),
          bool(before) and float(before[-1]["measured"]) >= 3.0)
    loud_i = float(before[-1]["input-integrated"]) if before else 0.0
    check("input-integrated of the loud tone ~ -10.5 LUFS (%.2f)" % loud_i,
          abs(loud_i + 10.46) < 0.2)

    engine.sendall(b"v1 1 set eq.bands=1000:-20:1\n")
    a = ack(1, time.monotonic() + 3)
    check("v1 1 set eq.bands=1000:-20:1 acknowledged ok (%s)" % a, a is not None and a.get("ok") == "true")
    # the programme change is over (the EQ ramps its coefficients over 20 ms)
    before.extend(f for kind, f in messages(time.monotonic() + 0.5) if kind == "loudnorm")
    engine.sendall(b"v1 2 set step0.reset-measurement=true\n")
    a = ack(2, time.monotonic() + 3)
    check("v1 2 set step0.reset-measurement=true acknowledged ok (%s)" % a,
          a is not None and a.get("ok") == "true")
    last_before = float(before[-1]["measured"])

    after = [f for kind, f in messages(time.monotonic() + 4) if kind == "loudnorm"]
    measured = [float(f["measured"]) for f in after]
    print("  measured after the acknowledgement:", " ".join("%.2f" % m for m in measured))
    restart = next((k for k in range(len(measured)) if measured[k] < last_before), None)
    check("measured restarts", restart is not None)
    if restart is not None:
        first = after[restart]
        check("first message after the reset: measured <= 0.35 s (%.3f)" % measured[restart],
              0.0 < measured[restart] <= 0.35)
        if measured[restart] < 0.4:
            check("input-integrated at the floor before the first 400 ms block (%s)"
                  % first["input-integrated"], float(first["input-integrated"]) == -120.0)
        check("measured then grows by 0.25 s a message",
              all(abs(measured[k + 1] - measured[k] - 0.25) < 1e-6
                  for k in range(restart, len(measured) - 1)))
        end = after[-1]
        quiet_i = float(end["input-integrated"])
        check("input-integrated re-measured at the quiet level ~ -30.5 LUFS (%.2f, %.1f s measured)"
              % (quiet_i, float(end["measured"])),
              abs(quiet_i + 30.46) < 0.5 and float(end["measured"]) >= 2.0)
        check("input-true-peak of the quiet part only (%.2f dBTP)" % float(end["input-true-peak"]),
              abs(float(end["input-true-peak"]) - (20 * math.log10(0.3) - 20.0)) < 0.3)
        check("input-loudness-range 0 on a steady tone (%s)" % end["input-loudness-range"],
              float(end["input-loudness-range"]) < 0.5)
finally:
    engine.close()
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()

print("PASSED" if failures == 0 else "FAILED (%d failures)" % failures)
sys.exit(1 if failures else 0)
