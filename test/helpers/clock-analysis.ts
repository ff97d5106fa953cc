/**
 * Figures of the clock tests from timed RTP packets (test/helpers/rtp-timing.ts): packet rate
 * against host time, RTP timestamp steps, and the media-clock offset band.
 */
import type { TimedPacket } from './rtp-timing.js';

export interface ClockFigures {
  packets: number;
  /** Packets per second of host time: least-squares slope of packet index over receive time. */
  packetsPerSecond: number;
  /**
   * Packets per second of host time from the packets that left on time (onTimePacketsPerSecond):
   * what the late packets of a loaded machine do not move.
   */
  onTimePacketsPerSecond: number;
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
  return { packets: n, packetsPerSecond: slope, onTimePacketsPerSecond: onTimePacketsPerSecond(packets), sequenceGaps: gaps, timestampSteps: steps, offsetMin, offsetMax, offsetP1: percentile(0.01), offsetP99: percentile(0.99), lateOver1ms: late };
}

/**
 * Packets per second of host time, measured on the packets that left on time. A packet can leave
 * late (its sending thread descheduled on a loaded 2-core machine: tens of ms, docs/clock.md) but
 * never before its time, so in each second of receive time the packet with the highest media-clock
 * offset is the one that left on time, or nearest to it. The rate is the median slope (Theil-Sen)
 * of packet index against receive time over pairs of those packets at least half the window
 * apart. Late packets move a least-squares line through every packet (a 20 ms stall at the end of
 * a 10 s window moves it by about 10 ppm); they move this figure only when every packet of a
 * second is late, and then one point of many.
 */
export function onTimePacketsPerSecond(packets: readonly TimedPacket[], bucketNs = 1_000_000_000n): number {
  const t0 = packets[0]?.recvNs ?? 0n;
  const best = new Map<bigint, { x: number; y: number; offset: number }>();
  packets.forEach((p, i) => {
    const bucket = (p.recvNs - t0) / bucketNs;
    const offset = mediaClockOffset(p);
    const seen = best.get(bucket);
    if (seen === undefined || offset > seen.offset) best.set(bucket, { x: Number(p.recvNs - t0) / 1e9, y: i, offset });
  });
  const points = [...best.values()].sort((a, b) => a.x - b.x);
  const apart = Math.max(1, Math.floor(points.length / 2));
  const slopes: number[] = [];
  for (let j = 0; j < points.length; j++) {
    for (let k = j + apart; k < points.length; k++) {
      const a = points[j];
      const b = points[k];
      if (a !== undefined && b !== undefined && b.x > a.x) slopes.push((b.y - a.y) / (b.x - a.x));
    }
  }
  slopes.sort((a, b) => a - b);
  if (slopes.length === 0) return 0;
  const mid = Math.floor(slopes.length / 2);
  return slopes.length % 2 === 1 ? (slopes[mid] ?? 0) : ((slopes[mid - 1] ?? 0) + (slopes[mid] ?? 0)) / 2;
}

/** The packets received between `fromNs` and `toNs` (CLOCK_REALTIME). */
export function between(packets: readonly TimedPacket[], fromNs: bigint, toNs: bigint): TimedPacket[] {
  return packets.filter((p) => p.recvNs >= fromNs && p.recvNs < toNs);
}

/** Now on CLOCK_REALTIME, ns (the clock of the receive timestamps). */
export function realtimeNs(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n;
}
