/**
 * The failover tests' reading of a received RTP output (RtpTiming with a payload file): which
 * sender's tone each 10 ms block carries (main 1 kHz, backup 440 Hz, by a Hann-window Goertzel),
 * silent blocks, the largest sample step, and each block's media time. The output's samples are
 * counted in media time: with no sequence gap and every timestamp stepping by the samples sent,
 * block k starts at sample k x 480 of the stream, and its RTP timestamp (the media clock, on
 * CLOCK_REALTIME with `[clock] source = "realtime"`) says when it plays.
 */
import { clockFigures } from './clock-analysis.js';
import { readPayloadAudio, type TimedPacket } from './rtp-timing.js';
import { toneBlocks } from './tones.js';

export const RATE = 48000;
/** 10 ms blocks. */
export const BLOCK = 480;

/** A tone of a sender: frequency and peak amplitude (AES17: a full-scale sine is 0 dBFS). */
export interface Tone {
  frequency: number;
  amplitude: number;
}

/** The failover tests' senders: main 1 kHz at -14 dBFS, backup 440 Hz at -20 dBFS. */
export const MAIN_TONE: Tone = { frequency: 1000, amplitude: 10 ** (-14 / 20) };
export const BACKUP_TONE: Tone = { frequency: 440, amplitude: 10 ** (-20 / 20) };

/** What a block carries: one sender's tone alone (within 3 dB, the other 10 dB under), silence (peak below -40 dBFS), or something between. */
export type BlockLabel = 'main' | 'backup' | 'silent' | 'mixed';

export interface FailoverAudio {
  /** The left channel (both carry the same tone). */
  left: Float32Array;
  labels: BlockLabel[];
  /** Per block: main's and the backup's amplitude. */
  main: number[];
  backup: number[];
  peak: number[];
  /** Packets whose sequence number or timestamp does not follow the previous one. */
  sequenceGaps: number;
  timestampSteps: number;
  /** When the block's first sample plays on CLOCK_REALTIME, ns (from its packet's RTP timestamp). */
  playsAt(block: number): number;
}

const TWO32 = 2 ** 32;

/** A packet's RTP timestamp + `index` as CLOCK_REALTIME ns, unwrapped near its receive time. */
export function mediaTimeNs(p: TimedPacket, index = 0): number {
  const recvSamples = Number((p.recvNs * BigInt(RATE)) / 1_000_000_000n);
  const ts = p.rtpTs + index;
  const wraps = Math.round((recvSamples - ts) / TWO32);
  return ((ts + wraps * TWO32) / RATE) * 1e9;
}

export function readFailoverAudio(packets: readonly TimedPacket[], payloadFile: string): FailoverAudio {
  const { samples, packetStart } = readPayloadAudio(payloadFile);
  const left = samples[0] ?? new Float32Array(0);
  const blocks = toneBlocks(left, [MAIN_TONE.frequency, BACKUP_TONE.frequency], BLOCK, RATE);
  const main = blocks.map((b) => b.amplitudes[0] ?? 0);
  const backup = blocks.map((b) => b.amplitudes[1] ?? 0);
  const peak = blocks.map((b) => b.peak);
  const labels = blocks.map((b, k): BlockLabel => {
    const m = main[k] ?? 0;
    const a = backup[k] ?? 0;
    if (b.peak < 0.01) return 'silent';
    if (m > MAIN_TONE.amplitude * 0.7 && a < BACKUP_TONE.amplitude * 0.3) return 'main';
    if (a > BACKUP_TONE.amplitude * 0.7 && m < MAIN_TONE.amplitude * 0.3) return 'backup';
    return 'mixed';
  });
  const figures = clockFigures(packets);
  const packetOf = (frame: number): number => packetHolding(packetStart, frame);
  return {
    left,
    labels,
    main,
    backup,
    peak,
    sequenceGaps: figures.sequenceGaps,
    timestampSteps: figures.timestampSteps,
    playsAt(block: number): number {
      const frame = block * BLOCK;
      const i = packetOf(frame);
      const p = packets[i];
      return p === undefined ? Number.NaN : mediaTimeNs(p, frame - (packetStart[i] ?? 0));
    },
  };
}

/** The first block at or after `from` that starts `run` blocks of `label` in a row; -1 if none. */
export function firstRun(labels: readonly BlockLabel[], label: BlockLabel, run: number, from = 0): number {
  let count = 0;
  for (let k = Math.max(0, from); k < labels.length; k++) {
    count = labels[k] === label ? count + 1 : 0;
    if (count >= run) return k - run + 1;
  }
  return -1;
}

/** The last block in [from, to) where `amplitudes` reaches `level`; -1 if none. */
export function lastAtLeast(amplitudes: readonly number[], level: number, from = 0, to = amplitudes.length): number {
  for (let k = Math.min(to, amplitudes.length) - 1; k >= from; k--) if ((amplitudes[k] ?? 0) >= level) return k;
  return -1;
}

/** The first block in [from, to) where `amplitudes` reaches `level`; -1 if none. */
export function firstAtLeast(amplitudes: readonly number[], level: number, from = 0, to = amplitudes.length): number {
  for (let k = Math.max(0, from); k < Math.min(to, amplitudes.length); k++) if ((amplitudes[k] ?? 0) >= level) return k;
  return -1;
}

/** Blocks in [from, to) labelled `label`. */
export function countLabel(labels: readonly BlockLabel[], label: BlockLabel, from: number, to: number): number {
  let n = 0;
  for (let k = Math.max(0, from); k < Math.min(to, labels.length); k++) if (labels[k] === label) n++;
  return n;
}

/**
 * The largest sample step a switch may make: the steeper tone's own largest step (its slope,
 * 2 pi f A / rate) plus what a linear crossfade of `fadeMs` between the two adds per sample (the
 * difference of the two signals, at most the sum of their peaks, over the fade's samples), and
 * 0.002 for the codec's noise (AAC at 256 kb/s: measured under 0.0003 on these tones). A cut
 * without a fade steps by up to the sum of the peaks (0.3).
 */
export function crossfadeStepBound(fadeMs = 10): number {
  const slope = (tone: Tone): number => (2 * Math.PI * tone.frequency * tone.amplitude) / RATE;
  const fade = (MAIN_TONE.amplitude + BACKUP_TONE.amplitude) / ((fadeMs / 1000) * RATE);
  return Math.max(slope(MAIN_TONE), slope(BACKUP_TONE)) + fade + 0.002;
}

/** A Prometheus counter's value from a scrape: the sample whose labels include all of `labels`; 0 when absent. */
export function scrapedValue(scrape: string, name: string, labels: Record<string, string>): number {
  for (const line of scrape.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}

/** The index of the packet that holds `frame`, given each packet's first frame (ascending). */
export function packetHolding(packetStart: readonly number[], frame: number): number {
  let lo = 0;
  let hi = packetStart.length - 1;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if ((packetStart[mid] ?? 0) <= frame) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
