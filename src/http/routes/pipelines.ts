import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { parsePipelineSpec, REST_BODY } from '../../spec/validate.js';
import type { PipelineRegistry } from '../../supervisor/registry.js';

const IdParams = Type.Object({ id: Type.String({ maxLength: 80 }) });
const LogsQuery = Type.Object(
  { lines: Type.Integer({ minimum: 1, maximum: 10000, default: 100 }) },
  { additionalProperties: false },
);

export function pipelineRoutes(pipelines: PipelineRegistry): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post('/api/v1/pipelines', async (request, reply) => {
      // The body is validated by the one spec validator that gRPC uses too.
      const spec = parsePipelineSpec(request.body, REST_BODY);
      const pipeline = await pipelines.create(spec);
      return reply.code(201).header('Location', `/api/v1/pipelines/${pipeline.id}`).send(pipeline);
    });

    app.get('/api/v1/pipelines', async () => ({ pipelines: pipelines.list() }));

    app.get('/api/v1/pipelines/:id', { schema: { params: IdParams } }, async (request) => pipelines.get(request.params.id));

    app.delete('/api/v1/pipelines/:id', { schema: { params: IdParams } }, async (request, reply) => {
      await pipelines.delete(request.params.id);
      return reply.code(204).send();
    });

    app.get(
      '/api/v1/pipelines/:id/logs',
      { schema: { params: IdParams, querystring: LogsQuery } },
      async (request, reply) => {
        const lines = pipelines.logs(request.params.id, request.query.lines);
        return reply.type('text/plain; charset=utf-8').send(lines.length === 0 ? '' : `${lines.join('\n')}\n`);
      },
    );
  };
}
