/** Bearer-key check for every REST route except health. */
import type { FastifyInstance } from 'fastify';
import type { KeyRing } from '../auth/keys.js';
import { UnauthorizedError } from '../errors.js';

const OPEN_PATHS = new Set(['/health', '/api/v1/health']);

export function installAuth(app: FastifyInstance, keys: KeyRing | undefined): void {
  if (keys === undefined) return;
  app.addHook('onRequest', async (request) => {
    const path = request.url.split('?')[0] ?? '';
    if (OPEN_PATHS.has(path)) return;
    if (!keys.acceptsHeader(request.headers.authorization)) {
      throw new UnauthorizedError(
        request.headers.authorization === undefined ? 'the Authorization: Bearer <key> header is required' : 'the bearer key is not valid',
      );
    }
  });
}
