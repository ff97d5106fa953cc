/**
 * Bearer-key check for every route except health and the given open routes (matched by route
 * pattern, not by the raw URL: the dashboard's page and its static files, `/` and `/ui/*`).
 */
import type { FastifyInstance } from 'fastify';
import type { KeyRing } from '../auth/keys.js';
import { UnauthorizedError } from '../errors.js';

const OPEN_PATHS = new Set(['/health', '/api/v1/health']);

export function installAuth(app: FastifyInstance, keys: KeyRing | undefined, openRoutes: readonly string[] = []): void {
  if (keys === undefined) return;
  const open = new Set(openRoutes);
  app.addHook('onRequest', async (request) => {
    const path = request.url.split('?')[0] ?? '';
    if (OPEN_PATHS.has(path)) return;
    const route = request.routeOptions.url;
    if (route !== undefined && open.has(route)) return;
    if (!keys.acceptsHeader(request.headers.authorization)) {
      throw new UnauthorizedError(
        request.headers.authorization === undefined ? 'the Authorization: Bearer <key> header is required' : 'the bearer key is not valid',
      );
    }
  });
}
