#!/usr/bin/env python3
"""Receives RTP on several multicast legs at once, each joined on its own interface, and prints one
JSON line at the end: per leg the packets in arrival order as [sequence, timestamp, ssrc,
crc32 of the payload]. Prints `ready` once every socket is bound and joined. Ends when its stdin
ends or after SECONDS (at most 120). Run inside a test's network namespace.

  leg-receiver.py SECONDS GROUP:PORT:INTERFACE_ADDRESS [GROUP:PORT:INTERFACE_ADDRESS ...]
"""
import json
import select
import socket
import struct
import sys
import time
import zlib

seconds = float(sys.argv[1])
if not 0 < seconds <= 120:
    sys.exit('SECONDS must be in (0, 120]')
legs = []
for spec in sys.argv[2:]:
    group, port, address = spec.split(':')
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
    sock.bind((group, int(port)))  # bound to the group: only that leg's packets
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(group) + socket.inet_aton(address))
    legs.append({'socket': sock, 'packets': []})
print('ready', flush=True)

deadline = time.monotonic() + seconds
sockets = {leg['socket']: leg for leg in legs}
watched = list(sockets) + [sys.stdin]
done = False
while not done and time.monotonic() < deadline:
    readable, _, _ = select.select(watched, [], [], max(0.0, min(0.5, deadline - time.monotonic())))
    for r in readable:
        if r is sys.stdin:
            if sys.stdin.readline() == '':
                done = True
            continue
        data = r.recv(2048)
        if len(data) < 12:
            continue
        _, _, seq, ts, ssrc = struct.unpack('!BBHII', data[:12])
        sockets[r]['packets'].append([seq, ts, ssrc, zlib.crc32(data[12:])])
print(json.dumps({'legs': [leg['packets'] for leg in legs]}), flush=True)
