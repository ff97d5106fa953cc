/** The REST edge: fastify with strict bodies, one error shape, bearer auth and the routes. */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Aes67Sessions } from '../aes67/sessions.js';
import type { PtpMonitor } from '../aes67/ptp-monitor.js';
import type { KeyRing } from '../auth/keys.js';
import type { EngineHealth } from '../health.js';
import type { PipelineRegistry } from '../pipelines/registry.js';
import { installAuth } from './auth.js';
import { installBodyDrain } from './body-drain.js';
import { installErrorHandling } from './errors.js';
import { aes67Routes } from './routes/aes67.js';
import { installOpenApi } from './openapi.js';
import { healthRoutes } from './routes/health.js';
import { metricsRoutes } from './routes/metrics.js';
import { pipelineRoutes, withSdp } from './routes/pipelines.js';

export const BODY_LIMIT = 64 * 1024;

export interface RestDeps {
  log: Logger;
  keys: KeyRing | undefined;
  health: EngineHealth;
  pipelines: PipelineRegistry;
  metrics: Registry;
  aes67: Pick<Aes67Sessions, 'sdp' | 'list'>;
  ptp: Pick<PtpMonitor, 'status'>;
}

/**
 * A fastify instance as every HTTP edge of the engine has it (REST, dashboard): strict JSON
 * bodies, one error shape, bearer auth, one log line per request.
 */
export function createHttpServer(log: Logger, component: string, keys: KeyRing | undefined, openRoutes: readonly string[] = []): FastifyInstance {
  // Typed as fastify's logger interface so the instance keeps fastify's default generics.
  const logger: FastifyBaseLogger = log.child({ component });
  const app = Fastify({
    loggerInstance: logger,
    bodyLimit: BODY_LIMIT,
    return503OnClosing: true,
    forceCloseConnections: true,
    // One line per request from our own onResponse hook instead of fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
  });
  // JSON only: a text/plain body is a 415, not a string that fails later.
  app.removeContentTypeParser(['text/plain']);
  // An answer sent before the body was read (413, 415, 401) reaches a client still sending it.
  installBodyDrain(app);
  installErrorHandling(app);
  installAuth(app, keys, openRoutes);
  app.addHook('onResponse', async (request, reply) => {
    if (request.url.startsWith('/api/v1/metrics') || request.url.endsWith('/health') || request.url.startsWith('/ui/')) return;
    request.log.info({ method: request.method, url: request.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });
  return app;
}

export async function buildRestServer(deps: RestDeps): Promise<FastifyInstance> {
  const app = createHttpServer(deps.log, 'rest', deps.keys).withTypeProvider<TypeBoxTypeProvider>();
  await installOpenApi(app); // before the routes: it collects them as they are added
  await app.register(healthRoutes(deps.health, deps.ptp));
  await app.register(pipelineRoutes(deps.pipelines, withSdp(deps.aes67)));
  await app.register(aes67Routes(deps.pipelines, deps.aes67));
  await app.register(metricsRoutes(deps.metrics));
  return app;
}
