/**
 * A test NMOS registry: the IS-04 v1.3 Registration API on 127.0.0.1 (or `host`, inside a test's
 * network namespace: test/helpers/nmos-registry-cli.ts), enough of it for a node.
 * Every POSTed body is validated against registrationapi-resource-post-request.json (the official
 * schema, which checks `data` against the resource's own schema); invalid ones are answered 400
 * and recorded. Heartbeats are recorded with the time they arrived; forget() drops every resource
 * so the next heartbeat gets a 404. Registries given the same `resources` map are one cluster
 * (a node registered with one is known to the others); setUnavailable(true) answers 503 to
 * every request (a failed registry of the cluster).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { nmosSchemas } from './nmos-schemas.js';

const BASE = '/x-nmos/registration/v1.3';

export interface RegistryEvent {
  at: number;
  method: string;
  path: string;
  status: number;
}

export interface TestRegistry {
  url: string;
  /** type -> id -> the resource as last POSTed. */
  resources: Map<string, Map<string, Record<string, unknown>>>;
  heartbeats: number[];
  invalid: string[];
  events: RegistryEvent[];
  forget(): void;
  setUnavailable(on: boolean): void;
  close(): Promise<void>;
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    request.on('error', reject);
  });
}

export async function startTestRegistry(host = '127.0.0.1', resources = new Map<string, Map<string, Record<string, unknown>>>()): Promise<TestRegistry> {
  const schemas = nmosSchemas('is-04');
  // The validator compiled before listening: compiled at the first POST it took seconds on a
  // loaded machine, past the node's 2 s time-out, and the node moved on to the next registry.
  schemas.errors('registrationapi-resource-post-request.json', {});
  let unavailable = false;
  const heartbeats: number[] = [];
  const invalid: string[] = [];
  const events: RegistryEvent[] = [];
  const nodeKnown = (id: string): boolean => resources.get('node')?.has(id) === true;

  const answer = (response: ServerResponse, status: number, body?: unknown): number => {
    response.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
    response.end(body === undefined ? undefined : JSON.stringify(body));
    return status;
  };

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<number> => {
    const url = request.url ?? '';
    const text = await readBody(request);
    if (unavailable) return answer(response, 503, { code: 503, error: 'unavailable', debug: null });
    if (request.method === 'POST' && url === `${BASE}/resource`) {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        invalid.push(`not JSON: ${text.slice(0, 80)}`);
        return answer(response, 400, { code: 400, error: 'not JSON', debug: null });
      }
      const errors = schemas.errors('registrationapi-resource-post-request.json', body);
      if (errors.length > 0) {
        invalid.push(...errors);
        return answer(response, 400, { code: 400, error: errors.join('; '), debug: null });
      }
      const { type, data } = body as { type: string; data: Record<string, unknown> };
      const byId = resources.get(type) ?? new Map<string, Record<string, unknown>>();
      resources.set(type, byId);
      const existed = byId.has(String(data.id));
      byId.set(String(data.id), data);
      return answer(response, existed ? 200 : 201, data);
    }
    const heartbeat = /^\/x-nmos\/registration\/v1\.3\/health\/nodes\/([0-9a-f-]{36})$/.exec(url);
    if (request.method === 'POST' && heartbeat !== null) {
      if (!nodeKnown(heartbeat[1] ?? '')) return answer(response, 404, { code: 404, error: 'node not registered', debug: null });
      heartbeats.push(Date.now());
      const now = Date.now();
      return answer(response, 200, { health: `${Math.floor(now / 1000) + 37}` });
    }
    const removal = /^\/x-nmos\/registration\/v1\.3\/resource\/(nodes|devices|sources|flows|senders|receivers)\/([0-9a-f-]{36})$/.exec(url);
    if (request.method === 'DELETE' && removal !== null) {
      const type = (removal[1] ?? '').slice(0, -1);
      const id = removal[2] ?? '';
      if (resources.get(type)?.delete(id) !== true) return answer(response, 404, { code: 404, error: `no ${type} ${id}`, debug: null });
      if (type === 'node') resources.clear();
      return answer(response, 204);
    }
    return answer(response, 404, { code: 404, error: `no route ${request.method ?? ''} ${url}`, debug: null });
  };

  const server: Server = createServer((request, response) => {
    void handle(request, response).then(
      (status) => events.push({ at: Date.now(), method: request.method ?? '', path: request.url ?? '', status }),
      () => answer(response, 500, { code: 500, error: 'test registry failed', debug: null }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    resources,
    heartbeats,
    invalid,
    events,
    forget: () => resources.clear(),
    setUnavailable: (on) => {
      unavailable = on;
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
