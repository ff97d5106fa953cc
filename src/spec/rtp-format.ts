/**
 * The RTP L24/L16 format an output may have (AES67): the sample rate, the packet times with the
 * samples each packet carries, the bytes per sample, and what one packet's payload weighs. Pure
 * constants and arithmetic, shared by the spec's packet-size rule (rtp-output.ts), the compiler
 * (the payloader's ptime) and the SDP writer (aes67/sdp.ts).
 */

export const SAMPLE_RATE = 48_000;

/**
 * The UDP port every output leg sends from (udpsink's bind-port), so the Connection API can say
 * which it is (IS-05 source_port). Above Linux's ephemeral range (32768-60999), so no socket the
 * kernel numbers takes it; udpsink binds it with SO_REUSEADDR/SO_REUSEPORT (GLib), so every
 * child and both legs share it. Nothing is received on it.
 */
export const RTP_SOURCE_PORT = 61004;

/** The packet times an output may have, ms, with the samples each packet carries at 48 kHz. */
export const PTIME_SAMPLES = { 0.125: 6, 0.25: 12, 0.333: 16, 1: 48, 4: 192 } as const;
export type Ptime = keyof typeof PTIME_SAMPLES;
export const PTIMES = Object.keys(PTIME_SAMPLES).map(Number) as Ptime[];

export type Encoding = 'L24' | 'L16';
export const BYTES_PER_SAMPLE: Record<Encoding, number> = { L24: 3, L16: 2 };

/** Samples per packet at 48 kHz for a packet time. */
export function framecount(ptime: Ptime): number {
  return PTIME_SAMPLES[ptime];
}

/** RTP payload bytes of one packet (the 12-byte RTP header not counted). */
export function payloadBytes(encoding: Encoding, channels: number, ptime: Ptime): number {
  return BYTES_PER_SAMPLE[encoding] * channels * framecount(ptime);
}
