import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { parsePipelineSpec, REST_BODY, specWarnings } from '../../spec/validate.js';
import type { PipelineRegistry, PipelineView } from '../../supervisor/registry.js';

/** Adds the pipeline's SDP to what clients see (aes67/sessions.ts writes it). */
export type DescribePipeline = (view: PipelineView) => PipelineView & { sdp: string };

const IdParams = Type.Object({ id: Type.String({ maxLength: 80 }) });
const LogsQuery = Type.Object(
  { lines: Type.Integer({ minimum: 1, maximum: 10000, default: 100 }) },
  { additionalProperties: false },
);

export function pipelineRoutes(pipelines: PipelineRegistry, describe: DescribePipeline): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post('/api/v1/pipelines', async (request, reply) => {
      // The body is validated by the one spec validator that gRPC uses too.
      const spec = parsePipelineSpec(request.body, REST_BODY);
      const pipeline = await pipelines.create(spec);
      // warnings: advice that did not refuse the request (a multicast group outside 239.0.0.0/8).
      const body = { ...describe(pipeline), warnings: specWarnings(spec, REST_BODY) };
      return reply.code(201).header('Location', `/api/v1/pipelines/${pipeline.id}`).send(body);
    });

    app.get('/api/v1/pipelines', async () => ({ pipelines: pipelines.list().map(describe) }));

    app.get('/api/v1/pipelines/:id', { schema: { params: IdParams } }, async (request) => describe(pipelines.get(request.params.id)));

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
