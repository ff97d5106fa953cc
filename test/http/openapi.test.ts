/**
 * The OpenAPI document: served by a real engine at GET /api/v1/openapi.json, valid OpenAPI 3.1
 * by an independent validator (@seriousme/openapi-schema-validator), and listing every route
 * the REST server has (compared with fastify's own route tree) with the PATCH body's schema.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import pino from 'pino';
import { Registry } from 'prom-client';
import t from 'tap';
import { buildRestServer } from '../../src/http/server.js';
import { api, startEngine } from '../helpers/engine-process.js';

interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { properties?: Record<string, unknown> } }> } }>>;
}

/** METHOD path pairs from fastify's printRoutes tree (HEAD left out: fastify adds it to every GET). */
function routesOf(tree: string): string[] {
  const stack: string[] = [];
  const out: string[] = [];
  for (const line of tree.split('\n')) {
    const match = /^([│├└─ ]*)(\/\S*) \(([^)]+)\)$/.exec(line);
    if (match?.[1] === undefined || match[2] === undefined || match[3] === undefined) continue;
    const depth = Math.floor(match[1].length / 4);
    stack.length = depth;
    const full = `${stack.join('')}${match[2]}`;
    stack.push(match[2]);
    for (const method of match[3].split(', ')) if (method !== 'HEAD') out.push(`${method} ${full.replace(/:(\w+)/g, '{$1}')}`);
  }
  return out.sort();
}

void t.test('the served document is valid OpenAPI and has every route, PATCH included', async (t) => {
  const engine = await startEngine(t);
  const res = await api<OpenApiDocument>(engine, 'GET', '/api/v1/openapi.json');
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /application\/json/);
  const document = res.body;
  t.equal(document.openapi, '3.1.0');

  type Spec = Parameters<Validator['validate']>[0];
  const validator = new Validator();
  const result = await validator.validate(structuredClone(document) as unknown as Spec);
  t.ok(result.valid, `valid OpenAPI ${validator.version}: ${JSON.stringify(result.errors ?? [])}`);
  // the validator does judge: the same document with a broken path item is refused
  const broken = structuredClone(document) as unknown as { paths: Record<string, unknown> };
  broken.paths['/api/v1/pipelines'] = { post: { responses: 'none' } };
  t.notOk((await new Validator().validate(broken)).valid, 'a broken document is refused');

  // fastify's own list of routes, from the same server code the engine runs
  const app = await buildRestServer({ log: pino({ level: 'silent' }), keys: undefined, health: {} as never, pipelines: {} as never, metrics: new Registry() });
  t.teardown(() => app.close());
  await app.ready();
  const routes = routesOf(app.printRoutes({ commonPrefix: false }));
  t.ok(routes.includes('PATCH /api/v1/pipelines/{id}'), `the route tree was read: ${routes.join(', ')}`);
  const documented = Object.entries(document.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`)).sort();
  t.same(documented, routes, 'every route is documented, and nothing else');

  const patch = document.paths['/api/v1/pipelines/{id}']?.patch?.requestBody?.content['application/json']?.schema;
  t.ok(patch?.properties !== undefined && 'processing' in patch.properties && 'name' in patch.properties, 'PATCH documents its body');
  const create = document.paths['/api/v1/pipelines']?.post?.requestBody?.content['application/json']?.schema;
  t.ok(create?.properties !== undefined && 'input' in create.properties, 'POST documents its body');
});
