/**
 * Figures of the clock tests from timed RTP packets (test/helpers/rtp-timing.ts): packet rate
 * against host time, RTP timestamp steps, and the media-clock offset band.
 */
import type { TimedPacket } from './rtp-timing.js';

export interface ClockFigures {
  packets: number;
  /** Packets per second of host time: least-squares slope of packet index over receive time. */
  packetsPerSecond: number;
  /** Consecutive packets whose sequence number is not the previous + 1 (mod 2^16). */
  sequenceGaps: number;
  /** Consecutive packets whose RTP timestamps do not differ by `samplesPerPacket` (mod 2^32). */
  timestampSteps: number;
  /** (rtp_ts - t_recv x 48000 / 1e9) mod 2^32 as a signed offset, samples: lowest and highest. */
  offsetMin: number;
  offsetMax: number;
  /** The 1st and 99th percentiles of the offset, samples (a measurement choice on a shared VM). */
  offsetP1: number;
  offsetP99: number;
  /** Packets received more than 1 ms (48 samples at 48 kHz) after their timestamp. */
  lateOver1ms: number;
}

const TWO32 = 2n ** 32n;

/** The media-clock offset of one packet: its timestamp against the receive time, samples. */
export function mediaClockOffset(p: TimedPacket, rate = 48000): number {
  const expected = (p.recvNs * BigInt(rate)) / 1_000_000_000n;
  let d = (BigInt(p.rtpTs) - expected) % TWO32;
  if (d < 0n) d += TWO32;
  if (d >= TWO32 / 2n) d -= TWO32;
  return Number(d);
}

export function clockFigures(packets: readonly TimedPacket[], samplesPerPacket = 48): ClockFigures {
  let gaps = 0;
  let steps = 0;
  let offsetMin = Number.POSITIVE_INFINITY;
  let offsetMax = Number.NEGATIVE_INFINITY;
  const offsets: number[] = [];
  // least squares of index i over time x (seconds from the first packet)
  const t0 = packets[0]?.recvNs ?? 0n;
  let n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  packets.forEach((p, i) => {
    const prev = packets[i - 1];
    if (prev !== undefined) {
      if (p.seq !== ((prev.seq + 1) & 0xffff)) gaps += 1;
      if (((p.rtpTs - prev.rtpTs) >>> 0) !== samplesPerPacket) steps += 1;
    }
    const offset = mediaClockOffset(p);
    offsetMin = Math.min(offsetMin, offset);
    offsetMax = Math.max(offsetMax, offset);
    offsets.push(offset);
    const x = Number(p.recvNs - t0) / 1e9;
    n += 1; sx += x; sy += i; sxx += x * x; sxy += x * i;
  });
  const slope = n < 2 ? 0 : (n * sxy - sx * sy) / (n * sxx - sx * sx);
  offsets.sort((a, b) => a - b);
  const percentile = (q: number): number => offsets[Math.min(offsets.length - 1, Math.floor(q * offsets.length))] ?? Number.NaN;
  const late = offsets.filter((o) => o < -48).length; // 1 ms at 48 kHz
  return { packets: n, packetsPerSecond: slope, sequenceGaps: gaps, timestampSteps: steps, offsetMin, offsetMax, offsetP1: percentile(0.01), offsetP99: percentile(0.99), lateOver1ms: late };
}

/** The packets received between `fromNs` and `toNs` (CLOCK_REALTIME). */
export function between(packets: readonly TimedPacket[], fromNs: bigint, toNs: bigint): TimedPacket[] {
  return packets.filter((p) => p.recvNs >= fromNs && p.recvNs < toNs);
}

/** Now on CLOCK_REALTIME, ns (the clock of the receive timestamps). */
export function realtimeNs(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n;
}
