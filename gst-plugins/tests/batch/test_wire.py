#!/usr/bin/env python3
"""rtpbatch on the wire: audiotestsrc ! rtpL24pay (1 ms) ! rtpbatch packets=N !
udpsink sync=true to a receiver on 127.0.0.1. Every packet arrives once and in
order, the stream keeps real time, and the kernel's receive timestamps
(SO_TIMESTAMPNS) show bursts of N packets every N ms (N = 1: one per ms)."""
import socket
import statistics
import struct
import subprocess
import sys

LAUNCH = sys.argv[1]
SECONDS = 1.5
# Linux value; not every Python build names it
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
failures = []


def check(what, ok):
    print(("ok     " if ok else "FAILED ") + what)
    if not ok:
        failures.append(what)


def receive(packets_per_list):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(5.0)
    port = sock.getsockname()[1]
    desc = ("audiotestsrc is-live=true num-buffers=%d samplesperbuffer=480 ! "
            "audio/x-raw,format=S24BE,rate=48000,channels=2 ! "
            "rtpL24pay pt=96 min-ptime=1000000 max-ptime=1000000 ! "
            "rtpbatch packets=%d ! udpsink host=127.0.0.1 port=%d sync=true async=false"
            % (int(SECONDS * 100), packets_per_list, port))
    proc = subprocess.Popen([LAUNCH, "-q", "-e", "--", *desc.split()],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    got = []  # (kernel arrival ns, seq, size)
    try:
        while True:
            try:
                data, anc, _flags, _addr = sock.recvmsg(2048, 64)
            except socket.timeout:
                break
            ts = None
            for level, kind, raw in anc:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", raw[:16])
                    ts = sec * 1_000_000_000 + nsec
            got.append((ts, struct.unpack("!H", data[2:4])[0], len(data)))
            if len(got) >= int(SECONDS * 1000):
                break
    finally:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        sock.close()
    return proc.returncode, proc.stderr.read() if proc.stderr else "", got


for n in (1, 4):
    print("packets=%d" % n)
    rc, err, got = receive(n)
    check("gst-launch exit 0 (%s) %s" % (rc, err.strip()[:200]), rc == 0)
    expected = int(SECONDS * 1000)
    check("%d packets received (%d)" % (expected, len(got)), len(got) == expected)
    seqs = [s for _, s, _ in got]
    check("sequence numbers consecutive, in order",
          all(((a + 1) & 0xFFFF) == b for a, b in zip(seqs, seqs[1:])))
    check("every packet 12 + 288 bytes", all(size == 300 for _, _, size in got))
    times = [t for t, _, _ in got]
    if len(times) < 100 or any(t is None for t in times):
        check("kernel receive timestamps present", False)
        continue
    span = (times[-1] - times[0]) / 1e9
    check("real time: %.3f s from first to last packet (1.499 +- 0.1)" % span, abs(span - 1.499) < 0.1)
    # bursts: packets whose arrivals are within 0.3 ms of the previous one
    bursts, size = [], 1
    for a, b in zip(times, times[1:]):
        if b - a < 300_000:
            size += 1
        else:
            bursts.append(size)
            size = 1
    bursts.append(size)
    med = statistics.median(bursts)
    check("median burst %s packets (expected %d)" % (med, n), med == n)
    gaps = [b - a for a, b in zip(times, times[1:]) if b - a >= 300_000]
    if gaps:
        gap_med = statistics.median(gaps) / 1e6
        # between bursts: N ms minus the burst's own spread
        check("median pause between bursts %.2f ms (about %d ms)" % (gap_med, n),
              abs(gap_med - n) < 0.5)

if failures:
    print("%d check(s) failed" % len(failures))
    sys.exit(1)
print("all checks passed")
