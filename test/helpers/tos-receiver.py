#!/usr/bin/env python3
"""Receives RTP (UDP) on a multicast group or a unicast port and reports what arrived: the TOS
byte of each packet, read with IP_RECVTOS (Node's dgram cannot), the payload types, the packet
sizes and, for L16 or L24, the RMS level of each channel over the last half of the packets.
For L16 or L24 the packets are counted from the first one that carries sound: the output sends
digital silence on time until its input has audio, and on a busy host that start can take longer
than the packets counted. Prints one JSON line at the end:
  {"packets": N, "tos": [...], "payload_types": [...], "sizes": [...], "rms_dbfs": [...]}
Bounded: stops after `count` packets or `seconds`.

    tos-receiver.py <group or 0.0.0.0> <port> <interface address> <count> <seconds> [L16|L24 <channels>]
"""
import json
import math
import socket
import sys
import time

group, port, iface, count, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
encoding = sys.argv[6] if len(sys.argv) > 6 else None
channels = int(sys.argv[7]) if len(sys.argv) > 7 else 2
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(('', port))
if group != '0.0.0.0':
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(group) + socket.inet_aton(iface))
sock.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
sock.settimeout(0.5)
print('ready', flush=True)
packets, tos, types, sizes, payloads = 0, set(), set(), set(), []
until = time.monotonic() + seconds
while packets < count and time.monotonic() < until:
    try:
        data, ancillary, _, _ = sock.recvmsg(2048, socket.CMSG_SPACE(4))
    except socket.timeout:
        continue
    if encoding in ('L16', 'L24') and not payloads and not any(data[12:]):
        continue  # before the sound: not counted
    packets += 1
    sizes.add(len(data))
    if len(data) >= 12:
        types.add(data[1] & 0x7f)
        payloads.append(data[12:])
    for level, kind, value in ancillary:
        if level == socket.IPPROTO_IP and kind == socket.IP_TOS:
            tos.add(value[0])

rms = []
if encoding in ('L16', 'L24') and payloads:
    width = 2 if encoding == 'L16' else 3
    full = float(1 << (8 * width - 1))
    sums, n = [0.0] * channels, 0
    for payload in payloads[len(payloads) // 2:]:
        frame = width * channels
        for at in range(0, len(payload) - frame + 1, frame):
            for ch in range(channels):
                v = int.from_bytes(payload[at + ch * width:at + (ch + 1) * width], 'big', signed=True) / full
                sums[ch] += v * v
            n += 1
    rms = [round(10 * math.log10(s / n), 2) if s > 0 and n > 0 else None for s in sums]
print(json.dumps({'packets': packets, 'tos': sorted(tos), 'payload_types': sorted(types), 'sizes': sorted(sizes), 'rms_dbfs': rms}), flush=True)
