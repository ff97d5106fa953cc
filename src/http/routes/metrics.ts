import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Registry } from 'prom-client';

export function metricsRoutes(registry: Registry): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get('/api/v1/metrics', async (_request, reply) =>
      reply.type(registry.contentType).send(await registry.metrics()),
    );
  };
}
