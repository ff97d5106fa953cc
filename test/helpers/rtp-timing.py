#!/usr/bin/env python3
"""RTP timing receiver for the clock e2e tests: the kernel's receive time of every packet.

    rtp-timing.py SECONDS [PAYLOAD_FILE]

Binds a UDP socket on 127.0.0.1 (ephemeral port, SO_TIMESTAMPNS, 8 MiB receive buffer, forced past
net.core.rmem_max when run as root), prints
{"port": P} on one line, then receives for SECONDS (or until stdin closes) and prints one line per
packet:  recv_ns seq rtp_ts peak first
recv_ns: CLOCK_REALTIME receive time the kernel stamped (SO_TIMESTAMPNS), ns; seq, rtp_ts: the RTP
header; peak: the largest |sample| of the L24 payload, 0..8388608; first: the frame index in the
packet of the first sample whose |value| exceeds 1/64 of full scale (-1 if none). Then "end DROPS" (datagrams the
kernel dropped on a full buffer, SO_RXQ_OVFL). With PAYLOAD_FILE, each packet's payload is also
written there, in the order of the lines, as a 2-byte big-endian length and the bytes; peak and
first are then not measured (0 and -1). Kernel timestamps do not depend on when this process
runs, so a loaded machine delays the lines but not the times.
"""
import json
import select
import socket
import struct
import sys
import time

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
SO_RXQ_OVFL = 40
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)


def main() -> None:
    seconds = float(sys.argv[1])
    payloads = open(sys.argv[2], "wb") if len(sys.argv) > 2 else None
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # SO_RCVBUF is capped by net.core.rmem_max (212992 on a fresh Debian 12: under half a second
    # of these packets, which a receiver descheduled on a loaded machine can exceed); root may
    # force it past the cap.
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 8 << 20)
    except PermissionError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)
    sock.bind(("127.0.0.1", 0))
    print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
    out = sys.stdout
    drops = 0
    end = time.monotonic() + seconds
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    poller.register(sys.stdin, select.POLLIN | select.POLLHUP)
    while time.monotonic() < end:
        events = poller.poll(100)
        if any(fd == sys.stdin.fileno() for fd, _ in events):
            break
        if not events:
            continue
        while True:
            try:
                data, ancdata, _flags, _addr = sock.recvmsg(2048, 256, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            if len(data) < 12 or data[0] >> 6 != 2:
                continue
            recv_ns = 0
            for level, kind, value in ancdata:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    sec, nsec = struct.unpack("qq", value[:16])
                    recv_ns = sec * 1_000_000_000 + nsec
                elif level == socket.SOL_SOCKET and kind == SO_RXQ_OVFL:
                    drops = struct.unpack("I", value[:4])[0]
            seq, ts = struct.unpack("!HI", data[2:8])
            offset = 12 + 4 * (data[0] & 0x0F)
            payload = data[offset:]
            peak = 0
            first = -1
            # with a payload file the reader measures the samples itself: no per-sample work here,
            # so that a receiver on a loaded machine keeps up (peak 0, first -1 then)
            for i in range(0, 0 if payloads is not None else len(payload) - 2, 3):
                v = int.from_bytes(payload[i:i + 3], "big", signed=True)
                if v < 0:
                    v = -v
                if v > peak:
                    peak = v
                if first < 0 and v > 131072:
                    first = i // 6
            out.write(f"{recv_ns} {seq} {ts} {peak} {first}\n")
            if payloads is not None:
                payloads.write(len(payload).to_bytes(2, "big") + payload)
    if payloads is not None:
        payloads.close()
    out.write(f"end {drops}\n")
    out.flush()


if __name__ == "__main__":
    main()
