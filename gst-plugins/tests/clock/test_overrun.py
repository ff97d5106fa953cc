#!/usr/bin/env python3
"""clockbridge's output thread overruns its real-time budget in a real gst-launch-1.0.

  audiotestsrc is-live ! clockbridge interval=20ms
      ! spectrum x 3 (65536 bands, an FFT every 4 ms each) ! fakesink sync=true

The spectrum analysers after the bridge run in its output thread (SCHED_FIFO 10) and need
several times the audio's duration in CPU (about 16 ms a 4 ms chunk with 32768 bands on the
2-core VM; this graph about twice that), so the thread is always late, never sleeps, and uses
RLIMIT_RTTIME's 200 ms of real-time CPU without blocking within the first second. Before the
guard (src/clock/rtguard.c) the kernel's SIGXCPU then ended the process ("CPU time limit
exceeded"); now:
  - the process keeps running for 4 s after that;
  - its stderr has the guard's line naming the thread (b:src) and the 200 ms;
  - the kernel has that thread at SCHED_OTHER (policy 0 in /proc/PID/task/TID/stat);
  - the bridge's messages say output-realtime=false.
Skipped (77) where SCHED_FIFO is refused (no CAP_SYS_NICE or RLIMIT_RTPRIO): the element then
never runs real time. The run is bounded (8 s) and the process is killed at the end."""
import os
import re
import signal
import subprocess
import sys
import time

LAUNCH = sys.argv[1]
failures = []


def check(what, ok):
    print(("ok     " if ok else "FAILED ") + what, flush=True)
    if not ok:
        failures.append(what)


def fifo_allowed():
    try:
        return subprocess.run(["chrt", "-f", "1", "true"], capture_output=True).returncode == 0
    except OSError:
        return False


def thread_policy(pid, comm):
    """The kernel's scheduling policy of the process's thread named comm (stat field 41), or None."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() != comm:
                    continue
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        return int(stat[stat.rindex(")") + 2:].split()[38])
    return None


def main():
    if not fifo_allowed():
        print("skip: SCHED_FIFO refused here")
        return 77
    heavy = ["spectrum", "bands=65536", "interval=4000000", "post-messages=false", "!"] * 3
    argv = [LAUNCH, "-m", "audiotestsrc", "is-live=true", "wave=pink-noise", "!",
            "audio/x-raw,format=F32LE,rate=48000,channels=2", "!",
            "clockbridge", "name=b", "interval=20000000", "!", *heavy, "fakesink", "sync=true"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    policy = None
    try:
        deadline = time.monotonic() + 8
        demoted_at = None
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            p = thread_policy(proc.pid, "b:src")
            if p is not None:
                policy = p
            if demoted_at is None and p == 0:
                demoted_at = time.monotonic()
            if demoted_at is not None and time.monotonic() - demoted_at >= 4:
                break
        alive = proc.poll() is None
        check("the child still runs 4 s after its output thread was demoted "
              "(returncode %s)" % proc.returncode, alive and demoted_at is not None)
        check("the output thread b:src runs SCHED_OTHER (kernel policy %s)" % policy, policy == 0)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=10)
    line = re.search(r"clockbridge: thread b:src \(tid \d+\) used 200 ms of real-time CPU "
                     r"without blocking: it runs SCHED_OTHER now", err)
    check("stderr names the thread and the limit: %r" % (line.group(0) if line else err[-300:]),
          line is not None)
    check("it ended by the test's SIGKILL, not SIGXCPU (%s)" % proc.returncode,
          proc.returncode == -signal.SIGKILL)
    rt = re.findall(r"clockbridge, .*?output-realtime=\(boolean\)(true|false)", out)
    check("the bridge's messages say output-realtime=false (%d messages, last %s)"
          % (len(rt), rt[-1] if rt else None), bool(rt) and rt[-1] == "false")
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
