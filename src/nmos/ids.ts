/**
 * NMOS identifiers and versions: name-based UUIDs (RFC 4122 version 5, SHA-1) so a node, its
 * device and each pipeline's source, flow and sender keep their ids across restarts, and TAI
 * `<seconds>:<nanoseconds>` version strings.
 */
import { createHash } from 'node:crypto';

/** A fixed namespace of this engine's NMOS ids (a random UUID chosen once). */
const NAMESPACE = Buffer.from('6c1f3b0e9a5d4e2b8f7a3c9d1e0b2a47', 'hex');

/** RFC 4122 version 5 UUID of `name` in the engine's namespace. */
export function nameUuid(name: string): string {
  const hash = createHash('sha1').update(NAMESPACE).update(name, 'utf8').digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** TAI minus UTC since 2017-01-01 (IERS Bulletin C: no leap second announced since). */
export const TAI_UTC_OFFSET_S = 37;

/** An NMOS version (TAI `<seconds>:<nanoseconds>`) of a UTC time in ms, plus a sub-ms sequence so two versions in one ms differ. */
export function taiVersion(utcMs: number, sequence = 0): string {
  const totalNs = BigInt(Math.floor(utcMs)) * 1_000_000n + BigInt(TAI_UTC_OFFSET_S) * 1_000_000_000n + BigInt(sequence % 1_000_000);
  return `${totalNs / 1_000_000_000n}:${totalNs % 1_000_000_000n}`;
}

/** TAI time of an NMOS `<seconds>:<nanoseconds>` string as UTC ms; undefined when malformed. */
export function taiToUtcMs(tai: string): number | undefined {
  const match = /^([0-9]{1,15}):([0-9]{1,9})$/.exec(tai);
  if (match === null) return undefined;
  return (Number(match[1]) - TAI_UTC_OFFSET_S) * 1000 + Number(match[2]) / 1e6;
}
