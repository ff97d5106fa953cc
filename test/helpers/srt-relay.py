#!/usr/bin/env python3
"""UDP relay in front of an SRT listener that times the caller's audio frames as they leave it.

    srt-relay.py TARGET_PORT SECONDS

Binds 127.0.0.1 (ephemeral port, SO_TIMESTAMPNS), prints {"port": P}, then relays datagrams
between the first peer that sends to it (the SRT caller) and 127.0.0.1:TARGET_PORT (the engine)
for SECONDS or until stdin closes. For every SRT data packet from the caller it reads the MPEG-TS
packets inside and prints, for each audio PES that starts there (stream id 0xC0-0xDF, or 0xBD:
SMPTE 302M's private stream):
    recv_ns pts
recv_ns: CLOCK_REALTIME time the kernel received the datagram from the caller, ns; pts: the PES
presentation timestamp (90 kHz). On loopback that is the time the sender sent the frame.
A line "pause" on stdin makes it drop every datagram both ways (a stalled link) until a line
"resume"; it then prints "resumed RECV_NS" (the kernel time of the caller's first datagram after
the resume) before that datagram's PES lines. The end of stdin ends it.
"""
import json
import os
import select
import socket
import struct
import sys
import time

SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


def pes_pts(ts: bytes):
    """PTS of an audio PES starting in this 188-byte TS packet, else None."""
    if len(ts) != 188 or ts[0] != 0x47 or not ts[1] & 0x40:
        return None
    afc = (ts[3] >> 4) & 3
    i = 4
    if afc & 2:
        i += 1 + ts[4]
    if not afc & 1 or i + 14 > 188:
        return None
    if ts[i:i + 3] != b"\x00\x00\x01" or not (0xC0 <= ts[i + 3] <= 0xDF or ts[i + 3] == 0xBD):
        return None
    if not ts[i + 7] & 0x80:
        return None
    p = ts[i + 9:i + 14]
    return (((p[0] >> 1) & 7) << 30) | (p[1] << 22) | ((p[2] >> 1) << 15) | (p[3] << 7) | (p[4] >> 1)


def main() -> None:
    target = ("127.0.0.1", int(sys.argv[1]))
    seconds = float(sys.argv[2])
    front = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    front.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    front.bind(("127.0.0.1", 0))
    back = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    back.bind(("127.0.0.1", 0))
    print(json.dumps({"port": front.getsockname()[1]}), flush=True)
    caller = None
    paused = False
    resumed = False
    poller = select.poll()
    for s in (front, back):
        poller.register(s, select.POLLIN)
    poller.register(sys.stdin, select.POLLIN | select.POLLHUP)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        events = poller.poll(100)
        if any(fd == sys.stdin.fileno() for fd, _ in events):
            commands = os.read(sys.stdin.fileno(), 1024)
            if commands == b"":
                break
            for command in commands.split():
                if command == b"pause":
                    paused = True
                elif command == b"resume":
                    paused = False
                    resumed = True
            continue
        for fd, _ in events:
            if fd == front.fileno():
                data, anc, _f, addr = front.recvmsg(2048, 64)
                caller = addr
                if paused:
                    continue
                back.sendto(data, target)
                recv_ns = 0
                for level, kind, value in anc:
                    if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                        sec, nsec = struct.unpack("qq", value[:16])
                        recv_ns = sec * 1_000_000_000 + nsec
                if resumed:
                    print(f"resumed {recv_ns}", flush=True)
                    resumed = False
                if len(data) > 16 and not data[0] & 0x80:  # SRT data packet
                    payload = data[16:]
                    for off in range(0, len(payload) - 187, 188):
                        pts = pes_pts(payload[off:off + 188])
                        if pts is not None:
                            print(f"{recv_ns} {pts}", flush=True)
            elif fd == back.fileno():
                data = back.recv(2048)
                if caller is not None and not paused:
                    front.sendto(data, caller)


if __name__ == "__main__":
    main()
