import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Aes67Sessions } from '../../aes67/sessions.js';
import { VersionMismatchError } from '../../errors.js';
import { PipelinePatch } from '../../spec/patch.js';
import { PipelineSpec } from '../../spec/schema.js';
import { parsePipelineSpec, REST_BODY, specWarnings } from '../../spec/validate.js';
import type { PipelineRegistry, PipelineView } from '../../pipelines/registry.js';

/** Adds the pipeline's SDP to what clients see (aes67/sessions.ts writes it). */
export type DescribePipeline = (view: PipelineView) => PipelineView & { sdp: string };

/** The one DescribePipeline of the REST and dashboard servers. */
export const withSdp = (sessions: Pick<Aes67Sessions, 'sdp'>): DescribePipeline => (view) => ({ ...view, sdp: sessions.sdp(view) });

const IdParams = Type.Object({ id: Type.String({ maxLength: 80 }) });
const LogsQuery = Type.Object(
  { lines: Type.Integer({ minimum: 1, maximum: 10000, default: 100 }) },
  { additionalProperties: false },
);
const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ maxLength: 200, description: 'the pipeline\'s ETag ("<version>") or *' })),
});

/** The pipeline's version as an entity tag: `"3"`. */
export function etagOf(pipeline: Pick<PipelineView, 'version'>): string {
  return `"${pipeline.version}"`;
}

/**
 * The version an If-Match header asks for: undefined for none or `*`. Anything but one strong
 * tag of ours can match no version of the pipeline: 412 (RFC 9110 13.1.1).
 */
export function expectedVersion(ifMatch: string | undefined, id: string): number | undefined {
  if (ifMatch === undefined || ifMatch.trim() === '*') return undefined;
  const match = /^\s*"([1-9][0-9]{0,14})"\s*$/.exec(ifMatch);
  if (match?.[1] === undefined) throw new VersionMismatchError(`If-Match ${JSON.stringify(ifMatch.slice(0, 40))} matches no version of pipeline ${id}`);
  return Number(match[1]);
}

export function pipelineRoutes(pipelines: PipelineRegistry, describe: DescribePipeline): FastifyPluginAsyncTypebox {
  return async (app) => {
    // RFC 7396's media type, besides application/json.
    app.addContentTypeParser('application/merge-patch+json', { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'));

    // The bodies are validated by the one spec validator that gRPC uses too; `openapiBody` only
    // documents them (http/openapi.ts).
    app.post('/api/v1/pipelines', { config: { openapiBody: PipelineSpec } }, async (request, reply) => {
      const spec = parsePipelineSpec(request.body, REST_BODY);
      const pipeline = await pipelines.create(spec);
      // warnings: advice that did not refuse the request (a multicast group outside 239.0.0.0/8).
      const body = { ...describe(pipeline), warnings: specWarnings(spec, REST_BODY) };
      return reply.code(201).header('Location', `/api/v1/pipelines/${pipeline.id}`).header('ETag', etagOf(pipeline)).send(body);
    });

    app.get('/api/v1/pipelines', async () => ({ pipelines: pipelines.list().map(describe) }));

    app.get('/api/v1/pipelines/:id', { schema: { params: IdParams } }, async (request, reply) => {
      const pipeline = pipelines.get(request.params.id);
      return reply.header('ETag', etagOf(pipeline)).send(describe(pipeline));
    });

    app.patch(
      '/api/v1/pipelines/:id',
      { schema: { params: IdParams, headers: IfMatchHeaders }, config: { openapiBody: PipelinePatch } },
      async (request, reply) => {
        const { id } = request.params;
        const { pipeline, applied } = await pipelines.update(id, request.body, REST_BODY, expectedVersion(request.headers['if-match'], id));
        return reply.header('ETag', etagOf(pipeline)).send({ ...describe(pipeline), applied });
      },
    );

    app.delete('/api/v1/pipelines/:id', { schema: { params: IdParams } }, async (request, reply) => {
      await pipelines.delete(request.params.id);
      return reply.code(204).send();
    });

    // Forces an input on air or hands back to the policy: {"select": "main"|"backup"|"fallback"|"auto"} (docs/failover.md).
    app.post('/api/v1/pipelines/:id/input', { schema: { params: IdParams } }, async (request, reply) => {
      const { pipeline, applied } = await pipelines.select(request.params.id, request.body, REST_BODY);
      return reply.header('ETag', etagOf(pipeline)).send({ ...describe(pipeline), applied });
    });

    // Starts the pipeline's programme measurement (integrated loudness, LRA, max true peak) again.
    app.post('/api/v1/pipelines/:id/loudness/reset', { schema: { params: IdParams } }, async (request) => {
      const { steps } = await pipelines.resetLoudness(request.params.id);
      return { id: request.params.id, reset: steps, reset_at: new Date().toISOString() };
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
