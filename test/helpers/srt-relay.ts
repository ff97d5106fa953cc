/**
 * A UDP relay in front of an SRT listener (test/helpers/srt-relay.py) that times each audio PES
 * of the caller as it leaves the caller (kernel receive time on loopback, CLOCK_REALTIME).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'srt-relay.py');

export interface SentFrame {
  /** When the datagram carrying the PES start left the caller, CLOCK_REALTIME ns. */
  sentNs: bigint;
  /** The PES presentation timestamp, 90 kHz. */
  pts: number;
}

export class SrtRelay {
  readonly frames: SentFrame[] = [];
  /** Kernel time of the caller's first datagram after each resume(), CLOCK_REALTIME ns. */
  readonly resumedAt: bigint[] = [];
  private readonly ended: Promise<void>;

  private constructor(private readonly child: ChildProcess, readonly port: number, lines: AsyncIterableIterator<string>) {
    this.ended = (async () => {
      for await (const line of lines) {
        const [sent, pts] = line.split(' ');
        if (sent === 'resumed' && pts !== undefined) {
          this.resumedAt.push(BigInt(pts));
          continue;
        }
        if (sent !== undefined && pts !== undefined) this.frames.push({ sentNs: BigInt(sent), pts: Number(pts) });
      }
    })();
  }

  /** Relays to 127.0.0.1:`targetPort`; ends by itself after `maxSeconds`. */
  static async open(targetPort: number, maxSeconds: number): Promise<SrtRelay> {
    const child = spawn('python3', [SCRIPT, String(targetPort), String(maxSeconds)], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const first = await lines.next();
    if (first.done === true) throw new Error('srt-relay.py did not start');
    const { port } = JSON.parse(first.value) as { port: number };
    return new SrtRelay(child, port, lines);
  }

  /** Drops every datagram both ways from now on (a stalled link), until resume(). */
  pause(): void {
    this.child.stdin?.write('pause\n');
  }

  /** Relays again; resumedAt gets the time of the caller's first datagram after it. */
  resume(): void {
    this.child.stdin?.write('resume\n');
  }

  async close(): Promise<void> {
    this.child.stdin?.end();
    await this.ended;
  }
}
