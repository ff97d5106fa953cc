import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { EngineHealth } from '../../health.js';

const HealthResponse = Type.Object({
  status: Type.Union([Type.Literal('healthy'), Type.Literal('unhealthy')]),
  version: Type.String(),
  uptime: Type.String(),
  reason: Type.Optional(Type.String()),
  overloaded: Type.Optional(Type.Object({
    since: Type.String(),
    message: Type.String(),
    headroom_ratio: Type.Number(),
    capacity_cores: Type.Number(),
    reserve_cores: Type.Number(),
    other_programs_cores: Type.Number(),
    admitted_cores: Type.Number(),
    children_cores: Type.Number(),
    pipelines_behind: Type.Array(Type.String()),
  })),
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
