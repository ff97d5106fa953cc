/** What test/helpers/leg-receiver.py prints of an ST 2022-7 output's legs, and the checks on it. */

/** [sequence, timestamp, ssrc, crc32 of the payload] */
export type Packet = [number, number, number, number];

/** Sequence steps other than +1 (mod 2^16) in a leg's packets: [from, to] pairs. */
export function gaps(packets: readonly Packet[]): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 1; i < packets.length; i += 1) {
    const prev = packets[i - 1]?.[0] ?? 0;
    const seq = packets[i]?.[0] ?? 0;
    if (seq !== ((prev + 1) & 0xffff)) out.push([prev, seq]);
  }
  return out;
}

/** Packets missing in a gap [from, to]. */
export function missingIn(gap: readonly [number, number] | undefined): number {
  return gap === undefined ? 0 : ((gap[1] - gap[0] + 0x10000) % 0x10000) - 1;
}
