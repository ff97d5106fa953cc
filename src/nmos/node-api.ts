/**
 * The NMOS HTTP edge on [nmos] http_port: the IS-04 v1.3 Node API (read-only) and the IS-05 v1.1
 * Connection API of the senders (connection-api.ts; its transport files are the senders'
 * manifest_href). CORS on every answer, errors as `{code, error, debug}` (IS-04/IS-05 error.json).
 * Every path answers GET and HEAD alike with and without a trailing slash (IS-04 "APIs: URLs"),
 * and a JSON answer's Content-Type is `application/json` without a charset parameter (JSON is
 * UTF-8 by definition, RFC 8259; AMWA's testing tool warns about the parameter).
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import { NODE_API_VERSION, type NmosModel, type NmosResource } from './resources.js';
import type { StreamSource } from '../aes67/sessions.js';
import { registerConnectionApi } from './connection-api.js';
import type { SenderConnections } from './connection.js';

export interface NodeApiDeps {
  log: Logger;
  model: Pick<NmosModel, 'snapshot'>;
  /** The SDP of one output (Aes67Sessions.sdp). */
  sdp: (stream: StreamSource) => string;
  connections: SenderConnections;
}

const NODE = `/x-nmos/node/${NODE_API_VERSION}`;
const JSON_TYPE = 'application/json';

export function sendError(reply: FastifyReply, code: number, error: string, debug: string | null = null): FastifyReply {
  return reply.code(code).send({ code, error, debug });
}

const COLLECTIONS = ['devices', 'sources', 'flows', 'senders', 'receivers'] as const;
type Collection = (typeof COLLECTIONS)[number];

export function buildNodeApi(deps: NodeApiDeps): FastifyInstance {
  const logger: FastifyBaseLogger = deps.log;
  const app = Fastify({
    loggerInstance: logger, bodyLimit: 64 * 1024, forceCloseConnections: true, logController: new LogController({ disableRequestLogging: true }),
    routerOptions: { ignoreTrailingSlash: true },
  });
  app.addHook('onSend', async (_request, reply, payload) => {
    if (String(reply.getHeader('content-type') ?? '').startsWith(JSON_TYPE)) reply.header('content-type', JSON_TYPE);
    reply.header('access-control-allow-origin', '*');
    reply.header('access-control-allow-methods', 'GET, PUT, POST, PATCH, HEAD, OPTIONS, DELETE');
    reply.header('access-control-allow-headers', 'Content-Type, Accept');
    reply.header('access-control-max-age', '3600');
    return payload;
  });
  app.options('*', async (_request, reply) => reply.code(200).send());
  app.setNotFoundHandler(async (request, reply) => sendError(reply, 404, `no resource at ${request.url.split('?')[0] ?? ''}`));
  app.setErrorHandler(async (error: { statusCode?: number; message: string }, _request, reply) => {
    const code = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    return sendError(reply, code, code === 500 ? 'internal error' : error.message, code === 500 ? error.message : null);
  });

  const collection = (name: Collection): NmosResource[] => {
    const snapshot = deps.model.snapshot();
    switch (name) {
      case 'devices':
        return [snapshot.device];
      case 'sources':
        return snapshot.sources;
      case 'flows':
        return snapshot.flows;
      case 'senders':
        return snapshot.senders;
      case 'receivers':
        return [];
    }
  };

  app.get('/', async () => ['x-nmos/']);
  app.get('/x-nmos', async () => ['node/', 'connection/']);
  app.get('/x-nmos/node', async () => [`${NODE_API_VERSION}/`]);
  app.get(NODE, async () => ['self/', 'sources/', 'flows/', 'devices/', 'senders/', 'receivers/']);
  app.get(`${NODE}/self`, async () => deps.model.snapshot().node);
  for (const name of COLLECTIONS) {
    app.get(`${NODE}/${name}`, async () => collection(name));
    app.get<{ Params: { id: string } }>(`${NODE}/${name}/:id`, async (request, reply) => {
      const found = collection(name).find((r) => r.id === request.params.id);
      if (found === undefined) return sendError(reply, 404, `no ${name.slice(0, -1)} ${request.params.id}`);
      return found;
    });
  }
  // Receivers: none (SRT inputs have no NMOS transport), so every receiver target is unknown.
  app.put<{ Params: { id: string } }>(`${NODE}/receivers/:id/target`, async (request, reply) => sendError(reply, 404, `no receiver ${request.params.id}`));

  registerConnectionApi(app, {
    connections: deps.connections,
    senderIds: () => deps.model.snapshot().senders.map((s) => s.id),
    output: (id) => deps.model.snapshot().outputs.get(id),
    sdp: deps.sdp,
    sendError,
  });
  return app;
}
