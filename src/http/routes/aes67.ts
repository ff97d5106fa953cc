/** AES67 discovery over REST: a pipeline's SDP and the sessions the engine announces with SAP. */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Aes67Sessions } from '../../aes67/sessions.js';
import type { PipelineRegistry } from '../../pipelines/registry.js';

const IdParams = Type.Object({ id: Type.String({ maxLength: 80 }) });

export function aes67Routes(pipelines: Pick<PipelineRegistry, 'get'>, sessions: Pick<Aes67Sessions, 'sdp' | 'list'>): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get('/api/v1/pipelines/:id/sdp', { schema: { params: IdParams } }, async (request, reply) => {
      const pipeline = pipelines.get(request.params.id);
      return reply.type('application/sdp').send(sessions.sdp(pipeline));
    });

    app.get('/api/v1/aes67/sessions', async () => ({ sessions: sessions.list() }));
  };
}
