/**
 * The SDP of one RTP output, in the shape AES67-2018 (annex example), SMPTE ST 2110-30 and
 * RFC 7273 expect. Pure: every value comes in validated; the pipeline's name is the only free text
 * and is sanitised. Lines, in this order (docs/aes67.md compares them with the standard's example):
 *
 *   v=0
 *   o=- <session id> <version> IN IP4 <sender unicast address>
 *   s=<name>
 *   t=0 0
 *   m=audio <port> RTP/AVP <pt>
 *   i=<n> channels: <names>
 *   c=IN IP4 <destination>[/<ttl>]        (TTL for a multicast destination only)
 *   a=recvonly
 *   a=rtpmap:<pt> <L24|L16>/48000/<n>
 *   a=fmtp:<pt> channel-order=SMPTE2110.(M|ST|U0<n>)   (ST 2110-30 section 6.2.2)
 *   a=ptime:<ms>
 *   a=framecount:<samples per packet>
 *   a=ts-refclk:ptp=IEEE1588-2008:<grandmaster>:<domain> | ptp=IEEE1588-2008:traceable | localmac=<mac>
 *   a=mediaclk:direct=0
 *   a=source-filter: incl IN IP4 <group> <sender unicast address>   (multicast only, RFC 4570)
 *
 * c= is at media level (RFC 8866 allows either level; the ST 2110 examples and AMWA's NMOS
 * Testing Tool, which reads each media section's c=, use media level), so one leg and two legs
 * have the same shape. An ST 2022-7 output (a redundant leg): after t= comes
 * `a=group:DUP primary secondary` (RFC 7104), then one such media section per leg with its own
 * c=, for multicast `a=source-filter: incl IN IP4 <group> <leg's sender>`, and
 * `a=mid:primary` / `a=mid:secondary`; each leg's `ts-refclk` its own (with `localmac`, the MAC
 * of the interface the leg sends from).
 *
 * `direct=0`: the RTP timestamps are the reference clock's time in samples (RFC 7273 5.2), as the
 * clock bridge and rtpbatch make them for every graph (SRT inputs and stations' Icecast inputs).
 */
import { createHash } from 'node:crypto';
import { isIPv6 } from 'node:net';
import { framecount, SAMPLE_RATE, type Encoding, type Ptime } from '../spec/rtp-format.js';

/** Where the RTP timestamps' clock comes from (RFC 7273 section 4.8). */
export type RefClock =
  | { kind: 'ptp'; grandmaster: string; domain: number }
  | { kind: 'ptp-traceable' }
  | { kind: 'localmac'; mac: string };

export interface SdpStream {
  /** Decimal digits, stable for the pipeline (sessionIdOf). */
  sessionId: string;
  /** Increases whenever the rest of the description changes. */
  version: number;
  /** IPv4 address of the sending interface. */
  origin: string;
  /** The pipeline's name (free text; sanitised here). */
  name: string;
  destination: string;
  /** Multicast TTL; undefined for a unicast destination (no TTL in c=). */
  ttl: number | undefined;
  port: number;
  payloadType: number;
  encoding: Encoding;
  channels: number;
  ptime: Ptime;
  refclk: RefClock;
  /** ST 2022-7's second leg: its destination, TTL (multicast only), port and sending address. */
  redundant?: SdpLeg | undefined;
}

export interface SdpLeg {
  destination: string;
  ttl: number | undefined;
  port: number;
  /** Address of the leg's sending interface (the multicast source filter's source). */
  origin: string;
  /** The leg's reference clock (localmac: its own interface's MAC). */
  refclk: RefClock;
}

export type LineEnding = '\r\n' | '\n';

/**
 * s= text: printable ASCII only (SDP is UTF-8, but several AES67 receivers show only ASCII), no
 * control characters, runs of spaces folded, at most 64 characters, never empty.
 */
export function sanitiseName(name: string): string {
  const ascii = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/\s+/g, ' ')
    .replace(/[^\x20-\x7e]/g, '_')
    .trim()
    .slice(0, 64)
    .trim();
  return ascii === '' ? '-' : ascii;
}

/** A stable numeric session id (decimal, < 2^48) for a pipeline id. */
export function sessionIdOf(pipelineId: string): string {
  const digest = createHash('sha256').update(pipelineId).digest();
  return String(digest.readUIntBE(0, 6));
}

/** "ptp4l's 1ec29e.fffe.225e6a" → RFC 7273's "1E-C2-9E-FF-FE-22-5E-6A". */
export function eui64ForSdp(identity: string): string {
  const hex = identity.replace(/[^0-9a-fA-F]/g, '').toUpperCase();
  if (hex.length !== 16) throw new Error(`not a clock identity: ${JSON.stringify(identity)}`);
  return (hex.match(/../g) ?? []).join('-');
}

function channelNames(channels: number): string {
  if (channels === 1) return 'M';
  if (channels === 2) return 'L, R';
  return Array.from({ length: channels }, (_, i) => String(i + 1)).join(', ');
}

/**
 * ST 2110-30's channel grouping (section 6.2.2): one channel is mono (M), two a standard stereo
 * pair (ST); any other count an undefined group of that many channels (U03 .. U08).
 */
export function channelOrder(channels: number): string {
  if (channels === 1) return 'SMPTE2110.(M)';
  if (channels === 2) return 'SMPTE2110.(ST)';
  return `SMPTE2110.(U${String(channels).padStart(2, '0')})`;
}

function refclkValue(refclk: RefClock): string {
  switch (refclk.kind) {
    case 'ptp':
      return `ptp=IEEE1588-2008:${refclk.grandmaster}:${refclk.domain}`;
    case 'ptp-traceable':
      return 'ptp=IEEE1588-2008:traceable';
    case 'localmac':
      return `localmac=${refclk.mac.toUpperCase().replace(/:/g, '-')}`;
  }
}

function connectionLine(destination: string, ttl: number | undefined): string {
  // IPv4 multicast carries its TTL; unicast and IPv6 (RFC 8866 section 5.7) do not.
  const v6 = isIPv6(destination);
  return `c=IN ${v6 ? 'IP6' : 'IP4'} ${ttl === undefined || v6 ? destination : `${destination}/${ttl}`}`;
}

/** The m= and i= lines of one leg, then its attributes (RFC 8866 order: c= between them). */
function media(stream: SdpMedia, port: number, refclk: RefClock): { m: string[]; attributes: string[] } {
  return {
    m: [`m=audio ${port} RTP/AVP ${stream.payloadType}`, `i=${stream.channels} channels: ${channelNames(stream.channels)}`],
    attributes: [
      'a=recvonly',
      `a=rtpmap:${stream.payloadType} ${stream.encoding}/${SAMPLE_RATE}/${stream.channels}`,
      `a=fmtp:${stream.payloadType} channel-order=${channelOrder(stream.channels)}`,
      `a=ptime:${stream.ptime}`,
      `a=framecount:${framecount(stream.ptime)}`,
      `a=ts-refclk:${refclkValue(refclk)}`,
      'a=mediaclk:direct=0',
    ],
  };
}

/** RFC 4570 source filter of a multicast leg (it has a TTL): only this sender's packets. */
function sourceFilter(destination: string, ttl: number | undefined, origin: string): string[] {
  if (ttl === undefined) return [];
  return [`a=source-filter: incl IN ${isIPv6(destination) ? 'IP6' : 'IP4'} ${destination} ${origin}`];
}

type SdpMedia = Omit<SdpStream, 'sessionId' | 'version'>;

/**
 * Every line but v= and o=: what decides whether the description changed. One leg: the shape
 * above. Two legs (ST 2022-7): RFC 7104 duplication grouping, `a=group:DUP primary
 * secondary` at session level, then per leg its m= section with its own c=, a source filter for
 * multicast (source: the leg's sending address) and `a=mid`.
 */
export function sdpBody(stream: SdpMedia): string[] {
  const name = `s=${sanitiseName(stream.name)}`;
  const primary = media(stream, stream.port, stream.refclk);
  const leg = stream.redundant;
  if (leg === undefined) {
    return [name, 't=0 0', ...primary.m, connectionLine(stream.destination, stream.ttl), ...primary.attributes, ...sourceFilter(stream.destination, stream.ttl, stream.origin)];
  }
  const secondary = media(stream, leg.port, leg.refclk);
  return [
    name,
    't=0 0',
    'a=group:DUP primary secondary',
    ...primary.m,
    connectionLine(stream.destination, stream.ttl),
    ...primary.attributes,
    ...sourceFilter(stream.destination, stream.ttl, stream.origin),
    'a=mid:primary',
    ...secondary.m,
    connectionLine(leg.destination, leg.ttl),
    ...secondary.attributes,
    ...sourceFilter(leg.destination, leg.ttl, leg.origin),
    'a=mid:secondary',
  ];
}

export function writeSdp(stream: SdpStream, eol: LineEnding = '\r\n'): string {
  const lines = ['v=0', `o=- ${stream.sessionId} ${stream.version} IN IP4 ${stream.origin}`, ...sdpBody(stream)];
  return lines.map((line) => line + eol).join('');
}

/**
 * The o= version of a description: the Unix time (seconds) of its first version, then, each time
 * the body changes, the next second or the current time, whichever is later. So a version never
 * goes back, even across restarts of the engine (the clock moves on meanwhile).
 */
export class SdpVersion {
  private body: string | undefined;
  private version = 0;

  /** The version for this body at time `nowMs`. */
  of(body: string, nowMs: number): number {
    if (body !== this.body) {
      this.version = Math.max(this.version + 1, Math.floor(nowMs / 1000));
      this.body = body;
    }
    return this.version;
  }
}
