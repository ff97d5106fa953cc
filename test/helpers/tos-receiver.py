#!/usr/bin/env python3
"""Receives UDP (RTP) on a multicast group or unicast port and reports the TOS byte of each
packet, read with IP_RECVTOS (Node's dgram cannot). Prints one JSON line at the end:
{"packets": N, "tos": [distinct TOS values]}. Bounded: stops after `count` packets or `seconds`.

    tos-receiver.py <group or 0.0.0.0> <port> <interface address> <count> <seconds>
"""
import json
import socket
import struct
import sys
import time

group, port, iface, count, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(('', port))
if group != '0.0.0.0':
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(group) + socket.inet_aton(iface))
sock.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
sock.settimeout(0.5)
print('ready', flush=True)
packets, tos = 0, set()
until = time.monotonic() + seconds
while packets < count and time.monotonic() < until:
    try:
        _, ancillary, _, _ = sock.recvmsg(2048, socket.CMSG_SPACE(4))
    except socket.timeout:
        continue
    packets += 1
    for level, kind, data in ancillary:
        if level == socket.IPPROTO_IP and kind == socket.IP_TOS:
            tos.add(data[0])
print(json.dumps({'packets': packets, 'tos': sorted(tos)}), flush=True)
