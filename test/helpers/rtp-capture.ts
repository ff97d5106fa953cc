/**
 * Receives RTP L24 on 127.0.0.1 and keeps everything needed to judge the stream as one
 * continuous output: every packet's sequence number, timestamp and frame count, and the samples
 * of each channel in arrival order (media time: frame k of the stream is sample k). Real UDP,
 * real decoding of the payload; the socket asks for a large receive buffer so that a test process
 * stalled on a loaded machine loses no datagram (which would read as a sequence gap).
 */
import { createSocket, type Socket } from 'node:dgram';

export interface RtpContinuity {
  packets: number;
  /** Packets whose sequence number is not the previous one's + 1 (mod 2^16). */
  sequenceGaps: number;
  /** Packets whose timestamp is not the previous one's + its frames (mod 2^32). */
  timestampSteps: number;
}

export class RtpCapture {
  private readonly channelSamples: Float32Array[];
  private length = 0;
  private closed = false;
  private readonly packetSeq: number[] = [];
  private readonly packetTs: number[] = [];
  private readonly packetFrames: number[] = [];

  private constructor(private readonly socket: Socket, readonly port: number, readonly channels: number) {
    this.channelSamples = Array.from({ length: channels }, () => new Float32Array(48000 * 30));
    socket.on('message', (packet) => this.onPacket(packet));
  }

  static async open(channels = 2): Promise<RtpCapture> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, '127.0.0.1', () => resolve());
    });
    try {
      socket.setRecvBufferSize(8 * 1024 * 1024);
    } catch {
      // the default buffer then (capped by net.core.rmem_max)
    }
    return new RtpCapture(socket, socket.address().port, channels);
  }

  private onPacket(packet: Buffer): void {
    const first = packet[0];
    if (packet.length < 12 || first === undefined || first >> 6 !== 2) return;
    const payload = packet.subarray(12 + 4 * (first & 0x0f));
    const frames = Math.floor(payload.length / (3 * this.channels));
    this.packetSeq.push(packet.readUInt16BE(2));
    this.packetTs.push(packet.readUInt32BE(4));
    this.packetFrames.push(frames);
    this.grow(this.length + frames);
    for (let f = 0; f < frames; f++) {
      for (let c = 0; c < this.channels; c++) {
        const store = this.channelSamples[c];
        if (store !== undefined) store[this.length + f] = payload.readIntBE(3 * (f * this.channels + c), 3) / 8388608;
      }
    }
    this.length += frames;
  }

  private grow(frames: number): void {
    const current = this.channelSamples[0]?.length ?? 0;
    if (frames <= current) return;
    for (let c = 0; c < this.channels; c++) {
      const bigger = new Float32Array(Math.max(frames, current * 2));
      bigger.set(this.channelSamples[c] ?? new Float32Array(0));
      this.channelSamples[c] = bigger;
    }
  }

  /** Frames received so far (per channel). */
  get frames(): number {
    return this.length;
  }

  /** One channel's samples, frames [0, frames). */
  channel(c: number): Float32Array {
    return (this.channelSamples[c] ?? new Float32Array(0)).subarray(0, this.length);
  }

  /** Sequence and timestamp continuity over every packet received. */
  continuity(): RtpContinuity {
    let sequenceGaps = 0;
    let timestampSteps = 0;
    for (let i = 1; i < this.packetSeq.length; i++) {
      if (this.packetSeq[i] !== (((this.packetSeq[i - 1] ?? 0) + 1) & 0xffff)) sequenceGaps += 1;
      if (this.packetTs[i] !== ((this.packetTs[i - 1] ?? 0) + (this.packetFrames[i - 1] ?? 0)) % 2 ** 32) timestampSteps += 1;
    }
    return { packets: this.packetSeq.length, sequenceGaps, timestampSteps };
  }

  /** Stops receiving (again: nothing). */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    return new Promise((resolve) => this.socket.close(() => resolve()));
  }
}
