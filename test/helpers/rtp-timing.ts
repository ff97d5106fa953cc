/**
 * The kernel's receive time of every RTP packet (test/helpers/rtp-timing.py, SO_TIMESTAMPNS on
 * CLOCK_REALTIME), for the clock tests: packet rate against host time, media-clock timestamps.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'rtp-timing.py');

export interface TimedPacket {
  /** CLOCK_REALTIME receive time, ns (bigint: ns since 1970 exceed 2^53). */
  recvNs: bigint;
  seq: number;
  rtpTs: number;
  /** Largest |sample| of the payload, 0..1. */
  peak: number;
  /** Frame index in the packet of the first sample above 1/64 of full scale, -1 if none. */
  first: number;
}

export class RtpTiming {
  readonly packets: TimedPacket[] = [];
  kernelDrops = 0;
  private readonly ended: Promise<void>;

  private constructor(private readonly child: ChildProcess, readonly port: number, lines: AsyncIterableIterator<string>) {
    this.ended = (async () => {
      for await (const line of lines) {
        if (line.startsWith('end ')) {
          this.kernelDrops = Number(line.slice(4));
          continue;
        }
        const [recv, seq, ts, peak, first] = line.split(' ');
        if (recv === undefined || seq === undefined || ts === undefined || peak === undefined || first === undefined) continue;
        this.packets.push({ recvNs: BigInt(recv), seq: Number(seq), rtpTs: Number(ts), peak: Number(peak) / 8388608, first: Number(first) });
      }
    })();
  }

  /**
   * Starts a receiver on 127.0.0.1 that ends by itself after `maxSeconds`; with `payloadFile`,
   * it also writes every packet's payload there (readPayloadAudio reads them after close), and
   * the packets' `peak` and `first` are not measured (0, -1). With `netns`, it receives on that
   * network namespace's 127.0.0.1 (an engine started there sends to it).
   */
  static async open(maxSeconds: number, payloadFile?: string, netns?: string): Promise<RtpTiming> {
    const args = payloadFile === undefined ? [SCRIPT, String(maxSeconds)] : [SCRIPT, String(maxSeconds), payloadFile];
    const [file, ...rest] = netns === undefined ? ['python3', ...args] : ['ip', 'netns', 'exec', netns, 'python3', ...args];
    const child = spawn(file ?? 'python3', rest, { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const first = await lines.next();
    if (first.done === true) throw new Error('rtp-timing.py did not start');
    const { port } = JSON.parse(first.value) as { port: number };
    return new RtpTiming(child, port, lines);
  }

  /** Stops receiving and waits for every line. */
  async close(): Promise<void> {
    this.child.stdin?.end();
    await this.ended;
  }
}

/**
 * The L24 audio of a payload file written by RtpTiming (one entry per packet, in the order of
 * `packets`): one Float32Array per channel (-1..1), the packets' samples one after another, and
 * the first frame of each packet in them.
 */
export function readPayloadAudio(file: string, channels = 2): { samples: Float32Array[]; packetStart: number[] } {
  const bytes = readFileSync(file);
  const packetStart: number[] = [];
  const chunks: Buffer[] = [];
  let frames = 0;
  for (let at = 0; at + 2 <= bytes.length;) {
    const length = bytes.readUInt16BE(at);
    const payload = bytes.subarray(at + 2, at + 2 + length);
    at += 2 + length;
    packetStart.push(frames);
    chunks.push(payload);
    frames += Math.floor(payload.length / (3 * channels));
  }
  const samples = Array.from({ length: channels }, () => new Float32Array(frames));
  let frame = 0;
  for (const payload of chunks) {
    for (let i = 0; i + 3 * channels <= payload.length; i += 3 * channels, frame++) {
      for (let c = 0; c < channels; c++) {
        const channel = samples[c];
        if (channel !== undefined) channel[frame] = payload.readIntBE(i + 3 * c, 3) / 8388608;
      }
    }
  }
  return { samples, packetStart };
}
