#!/usr/bin/env python3
"""aacframer in a decoding graph: ffmpeg writes MPEG-TS with AAC (one frame per PES and its
default packing), MP2 and SMPTE 302M; gst-launch-1.0 decodes each with `tsdemux ! aacframer !
decodebin` and with `tsdemux ! decodebin`: the outputs are the same, sample for sample (the
framer's raw frames decode as aacparse's ADTS frames do, from the first frame on)."""
import array
import os
import subprocess
import sys
import tempfile

GST, FFMPEG = sys.argv[1], sys.argv[2]
RATE = 48000
failures = 0


def check(ok: bool, what: str) -> None:
    global failures
    print(("ok " if ok else "FAIL ") + what)
    if not ok:
        failures += 1


def decode(ts: str, framer: bool, out: str) -> array.array:
    chain = ["tsdemux", "!"] + (["aacframer", "!"] if framer else []) + ["decodebin", "!"]
    subprocess.run([GST, "-q", "filesrc", f"location={ts}", "!", *chain, "audioconvert", "!",
                    "audio/x-raw,format=F32LE,channels=1", "!", "filesink", f"location={out}"],
                   check=True, timeout=60)
    samples = array.array("f")
    with open(out, "rb") as f:
        samples.frombytes(f.read())
    return samples


with tempfile.TemporaryDirectory() as tmp:
    cases = [
        ("aac, one frame per PES", ["-c:a", "aac", "-b:a", "256k", "-pes_payload_size", "0"], 0),
        ("aac, default packing", ["-c:a", "aac", "-b:a", "256k"], 0),
        ("mp2", ["-c:a", "mp2", "-b:a", "384k"], 0),
        ("s302m", ["-c:a", "s302m", "-strict", "-2"], 0),
    ]
    for name, codec, skip in cases:  # skip: samples not compared at the start (none)
        ts = os.path.join(tmp, "in.ts")
        subprocess.run([FFMPEG, "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                        "aevalsrc=0.5*sin(2*PI*997*t)*(1+0.5*sin(2*PI*3*t)):s=48000:d=3", "-ac", "2",
                        *codec, "-f", "mpegts", ts], check=True, timeout=60)
        plain = decode(ts, False, os.path.join(tmp, "plain.raw"))
        framed = decode(ts, True, os.path.join(tmp, "framed.raw"))
        check(len(plain) == len(framed) and len(plain) > 2 * RATE,
              f"{name}: {len(framed)} samples with the framer, {len(plain)} without")
        worst = max((abs(a - b) for a, b in zip(plain[skip:], framed[skip:])), default=1.0)
        check(worst < 1e-6, f"{name}: largest difference {worst:.2e}")

print("FAILED" if failures else "ok")
sys.exit(1 if failures else 0)
