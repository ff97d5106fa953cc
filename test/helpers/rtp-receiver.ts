/**
 * Receives RTP L24 stereo on 127.0.0.1 and measures the audio: RMS and peak per channel in dBFS,
 * packets, sequence gaps, payload size and type. Real UDP, real decoding of the payload.
 */
import { createSocket, type Socket } from 'node:dgram';

export interface RtpStats {
  packets: number;
  payloadType: number | undefined;
  /** The most common payload size (the last packet before EOS may be shorter). */
  payloadBytes: number | undefined;
  sequenceGaps: number;
  frames: number;
  /** Per channel, over the analysed window. */
  rmsDbfs: number[];
  peakDbfs: number[];
}

export class RtpReceiver {
  private readonly socket: Socket;
  private readonly samples: number[][] = [[], []];
  private packets = 0;
  private payloadType: number | undefined;
  private readonly sizes = new Map<number, number>();
  private lastSeq: number | undefined;
  private gaps = 0;
  /** Date.now() at each packet's arrival: for figures a test prints, never for a timed assertion. */
  private readonly arrivals: number[] = [];

  private constructor(socket: Socket, readonly port: number) {
    this.socket = socket;
    socket.on('message', (packet) => this.onPacket(packet));
  }

  /**
   * `receiveBufferBytes` (optional) asks for a larger socket receive buffer (SO_RCVBUF, capped by
   * net.core.rmem_max), so that a test process stalled on a loaded machine loses no datagrams.
   */
  static async open(port = 0, options: { receiveBufferBytes?: number } = {}): Promise<RtpReceiver> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(port, '127.0.0.1', () => resolve());
    });
    if (options.receiveBufferBytes !== undefined) {
      try {
        socket.setRecvBufferSize(options.receiveBufferBytes);
      } catch {
        // the default buffer then
      }
    }
    return new RtpReceiver(socket, socket.address().port);
  }

  private onPacket(packet: Buffer): void {
    if (packet.length < 12 || packet[0] === undefined || (packet[0] >> 6) !== 2) return;
    const csrc = packet[0] & 0x0f;
    const offset = 12 + 4 * csrc;
    const seq = packet.readUInt16BE(2);
    if (this.lastSeq !== undefined && seq !== ((this.lastSeq + 1) & 0xffff)) this.gaps += 1;
    this.lastSeq = seq;
    this.packets += 1;
    this.arrivals.push(Date.now());
    this.payloadType = (packet[1] ?? 0) & 0x7f;
    const payload = packet.subarray(offset);
    this.sizes.set(payload.length, (this.sizes.get(payload.length) ?? 0) + 1);
    for (let i = 0, ch = 0; i + 3 <= payload.length; i += 3, ch ^= 1) {
      this.samples[ch]?.push(payload.readIntBE(i, 3) / 8388608);
    }
  }

  get received(): number {
    return this.packets;
  }

  /** Date.now() of the first packet that arrived at or after `ms`, if one did. */
  firstArrivalSince(ms: number): number | undefined {
    return this.arrivals.find((a) => a >= ms);
  }

  /** Date.now() of the last packet, if any came. */
  get lastArrival(): number | undefined {
    return this.arrivals.at(-1);
  }

  /** Waits until `count` packets have arrived, or the timeout passes. */
  async waitForPackets(count: number, timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (this.packets < count) {
      if (Date.now() > until) return false;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return true;
  }

  /**
   * Waits until `seconds` of audio (audioStats().audioSeconds: first to last block above
   * -40 dBFS) have arrived, or the timeout passes. The output sends silence from the child's
   * start, so a packet count says nothing about how long the caller's audio has been playing:
   * on a loaded machine the caller's start-up alone can take seconds.
   */
  async waitForAudio(seconds: number, timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (this.audioStats().audioSeconds < seconds) {
      if (Date.now() > until) return false;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return true;
  }

  /** Statistics; `skipSeconds` of the start and `tailSeconds` of the end are left out of the levels. */
  stats(skipSeconds = 0.5, tailSeconds = 0.3): RtpStats {
    const rate = 48000;
    const measure = (channel: number[]): { rms: number; peak: number } => {
      const window = channel.slice(Math.round(skipSeconds * rate), Math.max(0, channel.length - Math.round(tailSeconds * rate)));
      let sum = 0;
      let peak = 0;
      for (const x of window) {
        sum += x * x;
        peak = Math.max(peak, Math.abs(x));
      }
      const rms = window.length === 0 ? 0 : Math.sqrt(sum / window.length);
      return { rms: 20 * Math.log10(rms || 1e-12), peak: 20 * Math.log10(peak || 1e-12) };
    };
    const levels = this.samples.map(measure);
    return {
      packets: this.packets,
      payloadType: this.payloadType,
      payloadBytes: [...this.sizes.entries()].sort((a, b) => b[1] - a[1])[0]?.[0],
      sequenceGaps: this.gaps,
      frames: this.samples[0]?.length ?? 0,
      rmsDbfs: levels.map((l) => l.rms),
      peakDbfs: levels.map((l) => l.peak),
    };
  }

  /**
   * Statistics over the audio window: from the first to the last 10 ms block whose peak is above
   * `thresholdDbfs`, less `marginSeconds` at each end (a decoder's start, the bridge's 5 ms fade-in
   * and its trim of a start-up burst). The output sends digital silence before and after a
   * caller, so a fixed window from the caller's start measures silence that is correct output.
   * `audioSeconds` is the window's length before the margins; `dropouts` counts silent blocks
   * (peak below the threshold) inside it: a gap in the audio is reported, not averaged away.
   */
  audioStats(marginSeconds = 0.2, thresholdDbfs = -40): RtpStats & { audioSeconds: number; dropouts: number; startSeconds: number } {
    const rate = 48000;
    const block = rate / 100;
    const left = this.samples[0] ?? [];
    const right = this.samples[1] ?? [];
    const frames = Math.min(left.length, right.length);
    const threshold = 10 ** (thresholdDbfs / 20);
    const loud: boolean[] = [];
    for (let b = 0; b * block < frames; b++) {
      let peak = 0;
      for (let i = b * block; i < Math.min(frames, (b + 1) * block); i++) peak = Math.max(peak, Math.abs(left[i] ?? 0), Math.abs(right[i] ?? 0));
      loud.push(peak >= threshold);
    }
    const first = loud.indexOf(true);
    const last = loud.lastIndexOf(true);
    const base = this.stats(0, 0);
    if (first < 0) return { ...base, rmsDbfs: base.rmsDbfs.map(() => -240), audioSeconds: 0, dropouts: 0, startSeconds: 0 };
    const dropouts = loud.slice(first, last + 1).filter((x) => !x).length;
    const start = first * block + Math.round(marginSeconds * rate);
    const end = Math.max(start, (last + 1) * block - Math.round(marginSeconds * rate));
    const levels = [left, right].map((channel) => {
      let sum = 0;
      let peak = 0;
      for (let i = start; i < end; i++) {
        const x = channel[i] ?? 0;
        sum += x * x;
        peak = Math.max(peak, Math.abs(x));
      }
      const rms = end > start ? Math.sqrt(sum / (end - start)) : 0;
      return { rms: 20 * Math.log10(rms || 1e-12), peak: 20 * Math.log10(peak || 1e-12) };
    });
    return {
      ...base,
      rmsDbfs: levels.map((l) => l.rms),
      peakDbfs: levels.map((l) => l.peak),
      audioSeconds: ((last + 1 - first) * block) / rate,
      dropouts,
      startSeconds: (first * block) / rate,
    };
  }

  /**
   * The received audio as interleaved stereo float samples (-1..1, 48 kHz), `skipSeconds` of the
   * start and `tailSeconds` of the end left out.
   */
  interleaved(skipSeconds = 0, tailSeconds = 0): Float32Array {
    const rate = 48000;
    const left = this.samples[0] ?? [];
    const right = this.samples[1] ?? [];
    const frames = Math.min(left.length, right.length);
    const start = Math.min(frames, Math.round(skipSeconds * rate));
    const end = Math.max(start, frames - Math.round(tailSeconds * rate));
    const out = new Float32Array((end - start) * 2);
    for (let i = start, j = 0; i < end; i++, j += 2) {
      out[j] = left[i] ?? 0;
      out[j + 1] = right[i] ?? 0;
    }
    return out;
  }

  /** Forgets what was received so far. */
  reset(): void {
    this.samples[0] = [];
    this.samples[1] = [];
    this.packets = 0;
    this.sizes.clear();
    this.gaps = 0;
    this.lastSeq = undefined;
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }
}

/** RMS of a sine of peak amplitude `a`, in dBFS. */
export function sineRmsDbfs(amplitude: number): number {
  return 20 * Math.log10(amplitude / Math.SQRT2);
}
