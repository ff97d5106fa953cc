/**
 * The page's files on the dashboard port: `/` is index.html, `/ui/*` the ES modules, styles and
 * the vendored libraries (Preact, htm, uPlot), all copied into dist/dashboard by the build
 * (scripts/bundle.mjs). Nothing is fetched from anywhere else at run time.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance } from 'fastify';

/** The routes that serve the page: open without a key (the page then asks for one). */
export const PAGE_ROUTES = ['/', '/ui/*'] as const;

/**
 * dist/dashboard, found from this module: beside the bundle (dist/audio-engine.mjs), or above
 * it when run from the sources (src/http/routes/page.ts, dist/src/http/routes/page.js).
 */
export function findPageDir(from: string = path.dirname(fileURLToPath(import.meta.url))): string | undefined {
  for (let dir = from; ; dir = path.dirname(dir)) {
    for (const candidate of [path.join(dir, 'dashboard'), path.join(dir, 'dist', 'dashboard')]) {
      if (existsSync(path.join(candidate, 'index.html'))) return candidate;
    }
    if (path.dirname(dir) === dir) return undefined;
  }
}

export async function pageRoutes(app: FastifyInstance, root: string): Promise<void> {
  await app.register(fastifyStatic, {
    root,
    prefix: '/ui/',
    index: false,
    wildcard: true,
    // The files change with the engine's version only; the page itself is never cached.
    maxAge: 0,
    cacheControl: true,
  });
  app.get('/', async (_request, reply) => reply.header('Cache-Control', 'no-cache').sendFile('index.html'));
}
