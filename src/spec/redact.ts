/**
 * What clients are shown of a spec: the input's passphrase becomes "set" (REST and gRPC views,
 * logs). The secret itself only goes to the store (a 0600 record) and to the child's pipe.
 */
import type { SrtInput } from './schema.js';

/** Written in a view where the input has a passphrase. */
export const SECRET_SET = 'set';

export type SrtInputView = Omit<SrtInput, 'passphrase'> & { passphrase?: typeof SECRET_SET };

export function redactInput(input: SrtInput): SrtInputView {
  const { passphrase, ...rest } = input;
  return passphrase === undefined ? rest : { ...rest, passphrase: SECRET_SET };
}
