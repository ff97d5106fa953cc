/** Pipeline ids: `pl_` and 16 random base62 characters (95 bits). */
import { randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const LENGTH = 16;

export function newPipelineId(): string {
  let out = '';
  while (out.length < LENGTH) {
    for (const byte of randomBytes(LENGTH * 2)) {
      // 248 = 4 × 62: bytes above it would bias the draw, so they are skipped.
      if (byte < 248 && out.length < LENGTH) out += BASE62[byte % 62];
    }
  }
  return `pl_${out}`;
}

export const PIPELINE_ID = /^pl_[0-9A-Za-z]{12,64}$/;
