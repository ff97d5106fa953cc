/**
 * SAP packets (RFC 2974), pure: announcement and deletion of one session description.
 *
 *   byte 0    V=1 (3 bits) A=0 (IPv4 origin) R=0 T (0 announce, 1 deletion) E=0 C=0: 0x20 / 0x24
 *   byte 1    authentication length 0
 *   bytes 2-3 message identifier hash (network order; never 0: receivers skip the check on 0)
 *   bytes 4-7 originating source, IPv4
 *   then      payload type "application/sdp" and a NUL, then the payload
 *
 * An announcement's payload is the whole SDP. A deletion's payload is the session's o= line
 * (RFC 2974 section 6: the origin identifies the session to delete), under the hash of the
 * announcement it withdraws.
 */
import { createHash } from 'node:crypto';
import { isIPv4 } from 'node:net';

export const SAP_GROUP = '239.255.255.255';
export const SAP_PORT = 9875;
export const SAP_PAYLOAD_TYPE = 'application/sdp';

export type SapType = 'announce' | 'delete';

export interface SapMessage {
  type: SapType;
  /** 1-65535. */
  hash: number;
  /** IPv4 address of the announcing host. */
  origin: string;
  payloadType: string;
  payload: string;
}

/**
 * The message identifier hash of a description: 16 bits of its SHA-256, never 0. A changed
 * description gets another hash (but for a 1 in 65535 collision, which SessionHashes avoids).
 */
export function messageIdHash(sdp: string): number {
  const value = createHash('sha256').update(sdp).digest().readUInt16BE(0);
  return value === 0 ? 1 : value;
}

/** The o= line of an SDP, with the line end the SDP uses. */
export function originLine(sdp: string): string {
  const match = /^o=[^\r\n]*(\r?\n)/m.exec(sdp);
  if (match === null) throw new Error('the SDP has no o= line');
  return match[0];
}

export function encodeSap(message: Omit<SapMessage, 'payloadType'>): Buffer {
  if (!isIPv4(message.origin)) throw new Error(`SAP origin must be an IPv4 address, got ${message.origin}`);
  if (!Number.isInteger(message.hash) || message.hash < 1 || message.hash > 0xffff) {
    throw new Error(`SAP message id hash must be 1-65535, got ${message.hash}`);
  }
  const header = Buffer.alloc(8);
  header[0] = message.type === 'announce' ? 0x20 : 0x24;
  header[1] = 0;
  header.writeUInt16BE(message.hash, 2);
  message.origin.split('.').forEach((octet, i) => header.writeUInt8(Number(octet), 4 + i));
  return Buffer.concat([header, Buffer.from(`${SAP_PAYLOAD_TYPE}\0`, 'ascii'), Buffer.from(message.payload, 'utf8')]);
}

export function announcement(sdp: string, hash: number, origin: string): Buffer {
  return encodeSap({ type: 'announce', hash, origin, payload: sdp });
}

export function deletion(sdp: string, hash: number, origin: string): Buffer {
  return encodeSap({ type: 'delete', hash, origin, payload: originLine(sdp) });
}

/** Reads a SAP packet (IPv4 origin, no authentication data, no compression or encryption). */
export function decodeSap(packet: Buffer): SapMessage {
  if (packet.length < 8) throw new Error(`SAP packet too short: ${packet.length} bytes`);
  const flags = packet[0] ?? 0;
  if (flags >> 5 !== 1) throw new Error(`SAP version ${flags >> 5}, expected 1`);
  if ((flags & 0x10) !== 0) throw new Error('SAP packet with an IPv6 origin');
  if ((flags & 0x03) !== 0) throw new Error('SAP packet encrypted or compressed');
  const authWords = packet[1] ?? 0;
  const start = 8 + authWords * 4;
  const origin = [4, 5, 6, 7].map((i) => String(packet[i])).join('.');
  const rest = packet.subarray(start).toString('utf8');
  // The payload type is optional (RFC 2974): a payload starting with "v=0" has none.
  const nul = rest.indexOf('\0');
  const hasType = !rest.startsWith('v=0') && nul >= 0;
  return {
    type: (flags & 0x04) !== 0 ? 'delete' : 'announce',
    hash: packet.readUInt16BE(2),
    origin,
    payloadType: hasType ? rest.slice(0, nul) : SAP_PAYLOAD_TYPE,
    payload: hasType ? rest.slice(nul + 1) : rest,
  };
}

/**
 * RFC 2974 section 3.1 jitter: each interval is the base interval times a random factor in
 * [2/3, 4/3], so hosts that start together do not announce together.
 */
export function jitteredInterval(baseMs: number, random: () => number): number {
  return Math.round(baseMs * (2 / 3 + (2 / 3) * random()));
}
