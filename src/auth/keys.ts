/**
 * API keys: each configured as a plain key or as "sha256:<64 hex>" (the digest of one).
 * Every configured key is held as a SHA-256 digest; a presented key is hashed and compared with
 * every digest in constant time, so neither timing nor an early exit tells which key was near.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

const DIGEST = /^sha256:([0-9a-fA-F]{64})$/;
const PLAIN = /^[\x21-\x7e]+$/;

export function isValidKeySpec(spec: string): boolean {
  return DIGEST.test(spec) || (!spec.startsWith('sha256:') && PLAIN.test(spec));
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

export class KeyRing {
  private readonly digests: Buffer[];
  constructor(specs: readonly string[]) {
    this.digests = specs.map((spec) => {
      const match = DIGEST.exec(spec);
      return match?.[1] !== undefined ? Buffer.from(match[1], 'hex') : sha256(spec);
    });
  }

  get size(): number {
    return this.digests.length;
  }

  /** True when `presented` is one of the keys. */
  accepts(presented: string): boolean {
    const digest = sha256(presented);
    let found = false;
    for (const known of this.digests) found = timingSafeEqual(known, digest) || found;
    return found;
  }

  /** Checks an `Authorization` header value of the form `Bearer <key>`. */
  acceptsHeader(header: string | undefined): boolean {
    if (header === undefined) return false;
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header);
    return match?.[1] !== undefined && this.accepts(match[1]);
  }
}
