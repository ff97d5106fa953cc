"""Shared helpers of the pipelinestats tests: run gst-launch-1.0 -m and parse
its stdout the way the engine does."""
import re
import socket

LINE = re.compile(r'^Got message #\d+ from element "([^"]+)" \(element\): pipelinestats, (.*);$')
FIELD = re.compile(r'([a-z-]+)=\((guint64|double|boolean|int)\)([^,]+)')

UINT64 = ["seq", "running-time",
          "srt-packets-received", "srt-packets-lost", "srt-packets-retransmitted",
          "srt-packets-dropped", "srt-bytes-received", "output-packets", "output-bytes"]
DOUBLE = ["srt-rtt-ms", "srt-receive-rate-mbps", "srt-bandwidth-mbps"]
BOOLEAN = ["srt-connected"]
INT = ["srt-latency-ms"]
TYPES = {**{k: "guint64" for k in UINT64}, **{k: "double" for k in DOUBLE},
         **{k: "boolean" for k in BOOLEAN}, **{k: "int" for k in INT}}
SRT_FIELDS = ["srt-connected", "srt-rtt-ms", "srt-packets-received", "srt-packets-lost",
              "srt-packets-retransmitted", "srt-packets-dropped", "srt-bytes-received",
              "srt-receive-rate-mbps", "srt-bandwidth-mbps", "srt-latency-ms"]
OUTPUT_FIELDS = ["output-packets", "output-bytes"]


class Checker:
    def __init__(self):
        self.failures = 0

    def __call__(self, what, ok):
        print(f"  {what}: {'ok' if ok else 'FAIL'}", flush=True)
        if not ok:
            self.failures += 1


def parse(stdout, element=None):
    """[(line_index, {field: value})] of the pipelinestats messages, values
    converted to Python types; raises on a field it does not know (the
    buffer-* fields of the retired queue reading among them) or of another
    type."""
    msgs = []
    for i, line in enumerate(stdout.splitlines()):
        m = LINE.match(line)
        if not m or (element and m.group(1) != element):
            continue
        fields = {}
        for k, t, v in FIELD.findall(m.group(2)):
            if TYPES.get(k) != t:
                raise ValueError(f"field {k} has type {t}, expected {TYPES.get(k)}")
            fields[k] = {"guint64": int, "int": int, "double": float,
                         "boolean": lambda s: s == "true"}[t](v)
        msgs.append((i, fields))
    return msgs


def free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
