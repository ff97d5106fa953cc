import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { EngineHealth } from '../../health.js';

const HealthResponse = Type.Object({
  status: Type.Union([Type.Literal('healthy'), Type.Literal('unhealthy')]),
  version: Type.String(),
  uptime: Type.String(),
  reason: Type.Optional(Type.String()),
  damaged_records: Type.Optional(Type.Array(Type.Object({ file: Type.String(), reason: Type.String() }))),
});

export function healthRoutes(health: EngineHealth): FastifyPluginAsyncTypebox {
  return async (app) => {
    const handler = async (): Promise<{ code: 200 | 503; body: typeof HealthResponse.static }> => {
      const report = await health.report();
      return { code: report.status === 'healthy' ? 200 : 503, body: report };
    };
    for (const url of ['/health', '/api/v1/health']) {
      app.get(url, { schema: { response: { 200: HealthResponse, 503: HealthResponse } } }, async (_request, reply) => {
        const { code, body } = await handler();
        return reply.code(code).send(body);
      });
    }
  };
}
