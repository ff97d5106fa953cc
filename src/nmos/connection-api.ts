/**
 * The IS-05 v1.1 Connection API routes on the Node API's server (`/x-nmos/connection/v1.1/`):
 * `single/senders/{id}/` `constraints`, `staged` (GET, PATCH), `active`, `transportfile`,
 * `transporttype`, and `bulk/senders` (POST). No receivers: SRT inputs are not NMOS receivers.
 * A method a resource does not take is a 405; errors are `{code, error, debug}`.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { StreamSource } from '../aes67/sessions.js';
import type { ConnectionAnswer, SenderConnections } from './connection.js';
import { CONNECTION_API_VERSION } from './resources.js';

export interface ConnectionApiDeps {
  connections: SenderConnections;
  /** Sender ids, in the Node API's order. */
  senderIds: () => string[];
  output: (senderId: string) => StreamSource | undefined;
  sdp: (stream: StreamSource) => string;
  sendError: (reply: FastifyReply, code: number, error: string, debug?: string | null) => FastifyReply;
}

const BASE = `/x-nmos/connection/${CONNECTION_API_VERSION}`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** The transport of every sender (IS-05 v1.1: RTP, unicast or multicast). */
export const TRANSPORT_TYPE = 'urn:x-nmos:transport:rtp';
const WRITE_METHODS = ['DELETE', 'PATCH', 'POST', 'PUT'] as const;

type Params = { Params: { id: string } };

export function registerConnectionApi(app: FastifyInstance, deps: ConnectionApiDeps): void {
  const answer = (reply: FastifyReply, result: ConnectionAnswer): FastifyReply => reply.code(result.status).send(result.body);
  /**
   * GET (and HEAD) at `path`; every write method not in `allowed` is a 405. The server ignores a
   * trailing slash (node-api.ts), so each route answers with and without one.
   */
  const get = (path: string, handler: (id: string, reply: FastifyReply) => unknown, allowed: readonly string[] = []): void => {
    app.route({
      method: WRITE_METHODS.filter((m) => !allowed.includes(m)),
      url: path,
      handler: async (request, reply) => deps.sendError(reply, 405, `${request.method} is not allowed on ${path.replace(/:id/, '{id}')}`),
    });
    app.get<Params>(path, async (request, reply) => handler(request.params.id, reply));
  };

  app.get('/x-nmos/connection', async () => [`${CONNECTION_API_VERSION}/`]);
  get(BASE, () => ['bulk/', 'single/']);
  get(`${BASE}/single`, () => ['senders/', 'receivers/']);
  get(`${BASE}/single/senders`, () => deps.senderIds().map((id) => `${id}/`));
  get(`${BASE}/single/receivers`, () => []);
  get(`${BASE}/single/senders/:id`, (id, reply) => (deps.output(id) === undefined
    ? deps.sendError(reply, 404, `no sender ${id}`)
    : ['constraints/', 'staged/', 'active/', 'transportfile/', 'transporttype/']));
  get(`${BASE}/single/senders/:id/constraints`, (id, reply) => answer(reply, deps.connections.constraints(id)));
  get(`${BASE}/single/senders/:id/active`, (id, reply) => answer(reply, deps.connections.active(id)));
  get(`${BASE}/single/senders/:id/staged`, (id, reply) => answer(reply, deps.connections.staged(id)), ['PATCH']);
  app.patch<Params>(`${BASE}/single/senders/:id/staged`, async (request, reply) => answer(reply, await deps.connections.patch(request.params.id, request.body)));
  // A JSON string (IS-05 v1.1 transporttype-response-schema), not bare text.
  get(`${BASE}/single/senders/:id/transporttype`, (id, reply) => (deps.output(id) === undefined
    ? deps.sendError(reply, 404, `no sender ${id}`)
    : reply.type('application/json').send(JSON.stringify(TRANSPORT_TYPE))));
  get(`${BASE}/single/senders/:id/transportfile`, (id, reply) => {
    const stream = deps.output(id);
    if (stream === undefined) return deps.sendError(reply, 404, `no sender ${id}`);
    return reply.type('application/sdp').header('cache-control', 'no-cache').send(deps.sdp(stream));
  });

  get(`${BASE}/bulk`, () => ['senders/', 'receivers/']);
  for (const kind of ['senders', 'receivers'] as const) {
    const url = `${BASE}/bulk/${kind}`;
    app.route({
      method: ['GET', 'DELETE', 'PATCH', 'PUT'],
      url,
      handler: async (request, reply) => deps.sendError(reply, 405, `${request.method} is not allowed on bulk/${kind} (POST only)`),
    });
    app.post(url, async (request, reply) => {
      const body = request.body;
      const items = Array.isArray(body) ? (body as unknown[]) : undefined;
      const bad = items === undefined
        ? 'the body must be an array of {id, params}'
        : items.map((item, i) => {
          if (typeof item !== 'object' || item === null || Array.isArray(item)) return `[${i}] must be an object {id, params}`;
          const keys = Object.keys(item);
          const extra = keys.find((k) => k !== 'id' && k !== 'params');
          if (extra !== undefined) return `[${i}].${extra} is not known (id, params)`;
          const { id, params } = item as { id?: unknown; params?: unknown };
          if (typeof id !== 'string' || !UUID.test(id)) return `[${i}].id must be a lower-case UUID`;
          if (params === undefined) return `[${i}].params is required`;
          return undefined;
        }).find((why) => why !== undefined);
      if (bad !== undefined || items === undefined) return deps.sendError(reply, 400, bad ?? 'bad body');
      const results = [];
      for (const item of items as { id: string; params: unknown }[]) {
        const result = kind === 'receivers'
          ? { status: 404, body: { code: 404, error: `no receiver ${item.id}`, debug: null } }
          : await deps.connections.patch(item.id, item.params);
        const failed = result.body as { error?: string; debug?: string | null };
        results.push(result.status >= 400 ? { id: item.id, code: result.status, error: failed.error ?? '', debug: failed.debug ?? null } : { id: item.id, code: result.status });
      }
      return reply.code(200).send(results);
    });
  }
}
