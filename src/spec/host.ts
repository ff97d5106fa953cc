/** Output host: an IPv4/IPv6 literal or a DNS name. Nothing else reaches the pipeline text. */
import { isIP } from 'node:net';

const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

export function isDnsName(host: string): boolean {
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  if (name.length === 0 || name.length > 253) return false;
  const labels = name.split('.');
  // A name whose last label is all digits would be a malformed IPv4 literal ("300.1.1.1").
  if (/^[0-9]+$/.test(labels[labels.length - 1] ?? '')) return false;
  return labels.every((label) => LABEL.test(label));
}

/** An IPv4 or IPv6 literal, without an IPv6 zone id (`%eth0`; the interface is its own field). */
export function isIpLiteral(host: string): boolean {
  return !host.includes('%') && isIP(host) !== 0;
}

/** True for a literal IP or a DNS name. */
export function isValidHost(host: string): boolean {
  return isIpLiteral(host) || isDnsName(host);
}

export function isMulticast(host: string): boolean {
  const family = isIP(host);
  if (family === 4) {
    const first = Number(host.split('.')[0]);
    return first >= 224 && first <= 239;
  }
  if (family === 6) return /^ff/i.test(host);
  return false;
}
