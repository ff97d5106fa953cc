/**
 * What the schema alone cannot say about an RTP output: the AES67 packet-size limit across
 * channels, encoding and ptime (a refusal naming the field), and advice that is not a refusal
 * (a multicast group outside the administratively scoped 239.0.0.0/8: a warning in the response).
 */
import { isIP } from 'node:net';
import { payloadBytes } from './rtp-format.js';
import { ValidationError } from '../errors.js';
import { isMulticast } from './host.js';
import type { RtpOutput } from './schema.js';

/**
 * Most audio bytes one packet may carry: the AES67 limit as the engine applies it (a 1500-byte
 * Ethernet MTU less IP, UDP and RTP headers leaves 1460; 1440 keeps a margin, and is the figure
 * AES67 receivers are built for).
 */
export const MAX_PAYLOAD_BYTES = 1440;

/** Throws naming `<prefix>ptime` when one packet would carry more than 1440 bytes of audio. */
export function checkRtpOutput(output: RtpOutput, field: (name: string) => string): void {
  const bytes = payloadBytes(output.encoding, output.channels, output.ptime);
  if (bytes > MAX_PAYLOAD_BYTES) {
    throw new ValidationError(
      `${field('ptime')} ${output.ptime} ms with ${output.channels} channels of ${output.encoding} makes ${bytes}-byte packets; at most ${MAX_PAYLOAD_BYTES} bytes (AES67): use a shorter ptime or fewer channels`,
      ['output', 'ptime'],
    );
  }
}

/**
 * Fills the redundant leg's port (the output's when absent) and refuses a leg that is the primary
 * itself: the same host and port, and for multicast the same interface (a unicast destination's
 * route, not udpsink's multicast-iface, picks its interface). `hostField` names the leg's host.
 */
export function checkRedundantLeg(output: RtpOutput, hostField: string): void {
  const leg = output.redundant;
  if (leg === undefined) return;
  leg.port ??= output.port;
  const sameInterface = !isMulticast(leg.host) || (leg.interface ?? '') === (output.interface ?? '');
  if (leg.host === output.host && leg.port === output.port && sameInterface) {
    throw new ValidationError(
      `${hostField} ${leg.host} port ${leg.port} is the primary leg itself; a redundant leg needs another destination or, for multicast, another interface`,
      ['output', 'redundant', 'host'],
    );
  }
}

/** Advice for a valid output; empty when there is none. */
export function outputWarnings(output: RtpOutput, field: (name: string) => string): string[] {
  const warnings: string[] = [];
  if (isIP(output.host) === 4 && isMulticast(output.host) && !output.host.startsWith('239.')) {
    warnings.push(
      `${field('host')} ${output.host} is a multicast group outside 239.0.0.0/8 (administratively scoped, where AES67 streams belong); it is used as given`,
    );
  }
  return warnings;
}
