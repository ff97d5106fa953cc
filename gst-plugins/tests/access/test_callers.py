#!/usr/bin/env python3
"""srtaccess through gst-launch-1.0 -m -f -e, as the engine runs it, with real
ffmpeg SRT callers on loopback:

  * passphrase from a pipe (passphrase-fd): a caller without a passphrase and
    one with a wrong passphrase are refused (srtaccess event=rejected,
    reject-code 1011 / 1010, their address, passphrase=true); the listener
    keeps waiting; the right passphrase is accepted and its audio flows;
  * the passphrase is in no stderr line (srtobject and srtlib asked for at
    debug level 6: the element caps them), in /proc/PID/cmdline or environ;
  * without a passphrase: a caller with one is refused (1011,
    passphrase=false), a caller without one is accepted;
  * a passphrase the element cannot use (too short, a descriptor that is not
    open, nothing to read, no srtsrc) fails the start with an error that
    names the descriptor and does not quote the text;
  * while a caller streams, libsrt's receive thread ("SRT:RcvQ...") and its
    delivery thread ("SRT:TsbPd") run SCHED_FIFO 6 where this process may
    have it (else SCHED_OTHER), and the pipeline's other threads are as
    they were (gst-launch's own: SCHED_OTHER).

usage: test_callers.py GST_LAUNCH [--capture FILE]   (FILE: stdout of the first run)
Exit 77 (skipped) without ffmpeg or srtsrc."""
import os
import re
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stats"))
from pslaunch import Checker, parse, free_udp_port  # noqa: E402

LAUNCH = sys.argv[1]
CAPTURE = sys.argv[sys.argv.index("--capture") + 1] if "--capture" in sys.argv else None
# no space: ffmpeg 5.1 does not decode %20 in an srt:// URL (docs/elements-srtaccess.md)
SECRET = "correct-horse~battery"

ffmpeg = shutil.which("ffmpeg")
inspect = os.path.join(os.path.dirname(LAUNCH), "gst-inspect-1.0")
if not ffmpeg or subprocess.run([inspect, "--exists", "srtsrc"]).returncode != 0:
    print("skipped: needs ffmpeg and srtsrc")
    sys.exit(77)

check = Checker()


def secret_pipe(text):
    r, w = os.pipe()
    os.write(w, text.encode())
    os.close(w)
    return r


def description(port, fd):
    access = "srtaccess name=access source=src" + (" passphrase-fd=%d" % fd if fd is not None else "")
    return (
        "srtsrc name=src mode=listener localaddress=127.0.0.1 localport=%d latency=120 "
        "poll-timeout=100 keep-listening=false wait-for-connection=true%s ! "
        "queue ! fakesink name=out sync=false async=false   "
        "pipelinestats name=stats interval=200000000 source=src sink=out   %s"
        % (port, " pbkeylen=16" if fd is not None else "", access))


class Launch:
    def __init__(self, desc, pass_fds=(), env=None):
        self.lines = []
        self.lock = threading.Lock()
        self.proc = subprocess.Popen([LAUNCH, "-m", "-f", "-e", "--", *desc.split()],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     pass_fds=pass_fds, env=env)
        self.err = []
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True).start()

    def _read(self, stream, into):
        for line in stream:
            with self.lock:
                into.append(line.rstrip("\n"))

    def text(self):
        with self.lock:
            return "\n".join(self.lines)

    def wait_for(self, pred, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            if pred():
                return True
            time.sleep(0.05)
        return pred()

    def end(self, timeout=15):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(2)
            try:
                return self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait()


SRTSRC_READ_ERROR = "ERROR: from element /GstPipeline:pipeline0/GstSRTSrc:src: Could not read from resource."


def ended_by_itself(launch, rc):
    """gst-launch ended after its one caller: on EOS (exit 0), or with srtsrc's read error
    (exit 1, "Could not read from resource", gstsrtsrc.c gst_srt_src_fill): GStreamer 1.22's
    srtsrc now and then takes the caller's going away as a failed read rather than the end of
    the stream (seen once in a CI rehearsal, at the open listener's end).
    Either way the listener ended by itself. Returns (ok, how, stderr before that error)."""
    if rc == 0:
        return True, "exit 0 on EOS", launch.err
    if rc == 1 and SRTSRC_READ_ERROR in launch.err:
        return True, "exit 1 on srtsrc's read error", launch.err[:launch.err.index(SRTSRC_READ_ERROR)]
    return False, "exit %s" % rc, launch.err


ACCESS = re.compile(r'^Got message #\d+ from element "access" \(element\): srtaccess, (.*);$')
FIELD = re.compile(r'([a-z-]+)=\((string|int|boolean)\)("(?:[^"\\]|\\.)*"|[^,;]*)')


def access_events(launch):
    """the srtaccess messages as dicts, values typed; strings unescaped"""
    events = []
    for line in launch.text().splitlines():
        m = ACCESS.match(line)
        if not m:
            continue
        fields = {}
        for k, t, v in FIELD.findall(m.group(1)):
            if t == "int":
                fields[k] = int(v)
            elif t == "boolean":
                fields[k] = v == "true"
            else:
                fields[k] = re.sub(r"\\(.)", r"\1", v[1:-1] if v.startswith('"') else v)
        events.append(fields)
    return events


def stats(launch):
    return [f for _, f in parse(launch.text(), "stats")]


def caller(port, query, seconds):
    return subprocess.run([ffmpeg, "-nostdin", "-loglevel", "error", "-re", "-f", "lavfi",
                           "-i", "sine=f=1000:r=48000:d=%d" % seconds, "-ac", "2", "-c:a", "aac",
                           "-f", "mpegts", "srt://127.0.0.1:%d?mode=caller%s" % (port, query)],
                          capture_output=True, text=True, timeout=60)


# 1. a listener with a passphrase
env = dict(os.environ, GST_DEBUG="srtobject:6,srtlib:6,srtaccess:6,GST_PIPELINE:6")
port = free_udp_port()
fd = secret_pipe(SECRET)
pipe_inode = os.fstat(fd).st_ino
gst = Launch(description(port, fd), pass_fds=(fd,), env=env)
os.close(fd)
check("the pipeline runs (stats messages)", gst.wait_for(lambda: len(stats(gst)) >= 2, 10))
with open("/proc/%d/cmdline" % gst.proc.pid, "rb") as f:
    cmdline = f.read()
with open("/proc/%d/environ" % gst.proc.pid, "rb") as f:
    environ = f.read()
check("passphrase-fd in the argv, the passphrase not", b"passphrase-fd=" in cmdline and SECRET.encode() not in cmdline)
check("the passphrase is not in the environment", SECRET.encode() not in environ)
links = []
for name in os.listdir("/proc/%d/fd" % gst.proc.pid):
    try:
        links.append(os.readlink("/proc/%d/fd/%s" % (gst.proc.pid, name)))
    except OSError:
        pass
check("the child closed the pipe after reading it", "pipe:[%d]" % pipe_inode not in links)

none = caller(port, "", 2)
check("a caller without a passphrase fails (%d)" % none.returncode, none.returncode != 0)
wrong = caller(port, "&passphrase=wrong-horse~battery&pbkeylen=16", 2)
check("a caller with a wrong passphrase fails (%d)" % wrong.returncode, wrong.returncode != 0)
check("two rejected events", gst.wait_for(lambda: len(access_events(gst)) >= 2, 5))
check("still listening after both (no EOS, no exit)", gst.proc.poll() is None)
good = caller(port, "&passphrase=" + SECRET + "&pbkeylen=16", 3)
check("the right passphrase streams (%d %s)" % (good.returncode, good.stderr.strip()[-200:]), good.returncode == 0)
ended, how, _ = ended_by_itself(gst, gst.end())
check("gst-launch ends by itself after the caller (%s)" % how, ended)
if CAPTURE:
    with open(CAPTURE, "w") as f:
        f.write(gst.text() + "\n")
events = access_events(gst)
for e in events:
    print("  ", e)
rejected = [e for e in events if e.get("event") == "rejected"]
accepted = [e for e in events if e.get("event") == "accepted"]
check("no passphrase: reject-code 1011, passphrase=true",
      len(rejected) >= 1 and rejected[0].get("reject-code") == 1011 and rejected[0].get("passphrase") is True)
check("wrong passphrase: reject-code 1010 'Incorrect passphrase'",
      len(rejected) >= 2 and rejected[1].get("reject-code") == 1010 and rejected[1].get("reason") == "Incorrect passphrase")
check("each refusal names the caller 127.0.0.1:port",
      all(str(e.get("peer", "")).startswith("127.0.0.1:") for e in rejected))
check("the right caller accepted once", len(accepted) == 1 and str(accepted[0].get("peer", "")).startswith("127.0.0.1:"))
out = [f.get("output-bytes", 0) for f in stats(gst)]
# 3 s of AAC at ffmpeg's default 128 kb/s in MPEG-TS: about 50 kB
check("its stream went through (output-bytes up to %s)" % (max(out) if out else None), out and max(out) > 30000)
err = "\n".join(gst.err)
check("stderr has debug lines (%d) but not the passphrase" % len(gst.err), len(gst.err) > 0 and SECRET not in err)
check("srtobject's parameter line is capped away", "Opening SRT socket with parameters" not in err)

def threads(pid):
    """{comm: (policy, rt priority)} of each thread of pid (sched(7): 0 OTHER, 1 FIFO)"""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        rest = stat[stat.rindex(")") + 2:].split()
        out.setdefault(comm, []).append((int(rest[38]), int(rest[37])))
    return out


def may_fifo(priority):
    """this process may ask SCHED_FIFO priority (CAP_SYS_NICE or RLIMIT_RTPRIO)"""
    return subprocess.run(["chrt", "-f", str(priority), "true"], capture_output=True).returncode == 0


# 2. a listener without a passphrase
port = free_udp_port()
gst = Launch(description(port, None))
check("open pipeline runs", gst.wait_for(lambda: len(stats(gst)) >= 1, 10))
keyed = caller(port, "&passphrase=" + SECRET, 2)
check("a caller with a passphrase fails on an open listener (%d)" % keyed.returncode, keyed.returncode != 0)
streaming = threading.Thread(target=lambda: setattr(streaming, "result", caller(port, "", 4)))
streaming.start()
check("the caller is accepted", gst.wait_for(lambda: any(e.get("event") == "accepted" for e in access_events(gst)), 10))
seen = {}
gst.wait_for(lambda: seen.update(threads(gst.proc.pid)) or any(k.startswith("SRT:TsbPd") for k in seen), 3)
srt = {k: v for k, v in seen.items() if k.startswith("SRT:RcvQ") or k.startswith("SRT:TsbPd")}
print("   threads while streaming:", seen)
want = (1, 6) if may_fifo(6) else (0, 0)
check("libsrt's receive and delivery threads while streaming: %s, each %s" % (srt, want),
      any(k.startswith("SRT:RcvQ") for k in srt) and any(k.startswith("SRT:TsbPd") for k in srt)
      and all(p == want for v in srt.values() for p in v))
check("gst-launch's own thread stays SCHED_OTHER (%s)" % seen.get("gst-launch-1.0"),
      seen.get("gst-launch-1.0", [None])[0] == (0, 0))
streaming.join()
plain = streaming.result
check("a caller without one streams (%d)" % plain.returncode, plain.returncode == 0)
ended, how, before_end = ended_by_itself(gst, gst.end())
check("gst-launch ends by itself after the caller (%s)" % how, ended)
events = access_events(gst)
for e in events:
    print("  ", e)
check("refused with 1011, passphrase=false",
      any(e.get("event") == "rejected" and e.get("reject-code") == 1011 and e.get("passphrase") is False for e in events))
check("then accepted", any(e.get("event") == "accepted" for e in events))
check("nothing printed on stderr without GST_DEBUG (%r)" % before_end[:3], before_end == [])


# 3. passphrases the element cannot use: the start fails, naming the descriptor
def failing(what, desc, pass_fds, expect):
    run = subprocess.run([LAUNCH, "-m", "-f", "-e", "--", *desc.split()], capture_output=True, text=True,
                         pass_fds=pass_fds, timeout=30)
    check("%s: the start fails (exit %d)" % (what, run.returncode), run.returncode != 0)
    check("%s: '%s' in stderr" % (what, expect), expect in run.stderr)
    return run


port = free_udp_port()
fd = secret_pipe("tooshort")
run = failing("too short", description(port, fd), (fd,), "cannot read the SRT passphrase from descriptor %d: it is not 10-79 printable ASCII characters" % fd)
check("the text is not quoted", "tooshort" not in run.stderr + run.stdout)
os.close(fd)
failing("descriptor not open", description(port, 57), (), "cannot read the SRT passphrase from descriptor 57: the descriptor is not open")
r, w = os.pipe()
t = time.monotonic()
failing("nothing written", description(port, r), (r,), "nothing to read within 5 s")
check("gave up after about 5 s (%.1f s)" % (time.monotonic() - t), 4.5 < time.monotonic() - t < 20)
os.close(r)
os.close(w)
fd = secret_pipe(SECRET)
failing("no srtsrc", "fakesrc num-buffers=1 ! fakesink  srtaccess source=nothere passphrase-fd=%d" % fd, (fd,),
        'no srtsrc named "nothere" to set the SRT passphrase on')
os.close(fd)

sys.exit(1 if check.failures else 0)
