/** Bearer-key check of a gRPC call: metadata `authorization: Bearer <key>`, the REST key ring. */
import type { Metadata } from '@grpc/grpc-js';
import type { KeyRing } from '../auth/keys.js';
import { UnauthorizedError } from '../errors.js';

/** Throws UnauthorizedError unless auth is off or the call carries one of the keys. */
export function authorize(keys: KeyRing | undefined, metadata: Metadata): void {
  if (keys === undefined) return;
  const values = metadata.get('authorization');
  if (values.length === 0) throw new UnauthorizedError('the authorization: Bearer <key> metadata entry is required');
  const [value] = values;
  // One entry only: several would leave which one counts to the reader.
  if (values.length > 1 || typeof value !== 'string' || !keys.acceptsHeader(value)) {
    throw new UnauthorizedError('the bearer key is not valid');
  }
}
