/**
 * IS-04 v1.3 registered operation (src/nmos/registration.ts) against test registries on
 * 127.0.0.1 (test/helpers/nmos-registry.ts, real HTTP, every body schema-checked), in the order
 * DNS-SD gives them (lowest pri first):
 * - fail-over: a registry answering 503, then one whose connections time out: the next one's
 *   first request is a heartbeat (the cluster still holds the node), nothing re-registered;
 * - a 404 to that heartbeat (a registry outside the cluster): everything registered there;
 * - a 200 to the first registration of the node (a stale record): DELETE it, register again (201);
 * - the node's advertisement is withdrawn (onRegistry true) before the registry is contacted.
 */
import { createServer, type Server, type Socket } from 'node:net';
import pino from 'pino';
import t from 'tap';
import { fetchCall, REAL_TIMERS, Registration } from '../../src/nmos/registration.js';
import { startTestRegistry, type RegistryEvent, type TestRegistry } from '../helpers/nmos-registry.js';
import { testModel } from '../helpers/nmos-model.js';

const HEARTBEAT_MS = 400;

async function eventually(what: string, check: () => boolean, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A TCP server that takes connections and never answers: a registry whose requests time out. */
async function silentServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => sockets.add(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    }),
  };
}

const nodePosts = (registry: TestRegistry): RegistryEvent[] => registry.events.filter((e) => e.method === 'POST' && e.path.endsWith('/resource'));
const heartbeatsOf = (registry: TestRegistry): RegistryEvent[] => registry.events.filter((e) => e.path.includes('/health/nodes/'));

function registration(urls: () => string[], onRegistry?: (found: boolean) => void): Registration {
  return new Registration({
    model: testModel(),
    registries: async () => urls(),
    http: fetchCall(2000),
    timers: REAL_TIMERS,
    log: pino({ level: process.env.REG_LOG ?? 'silent' }),
    heartbeatMs: HEARTBEAT_MS,
    syncMs: 100,
    onRegistry,
  });
}

void t.test('fail-over on 503 and on a time-out: a heartbeat first at the next registry of the cluster', async (t) => {
  const cluster = new Map<string, Map<string, Record<string, unknown>>>();
  const [a, b, d] = await Promise.all([startTestRegistry('127.0.0.1', cluster), startTestRegistry('127.0.0.1', cluster), startTestRegistry('127.0.0.1', cluster)]);
  const silent = await silentServer();
  const outside = await startTestRegistry();
  t.teardown(() => Promise.all([a, b, d, outside].map((r) => r.close())).then(() => silent.close()));
  let urls = [a.url, b.url, silent.url, d.url];
  const found: boolean[] = [];
  let eventsAtFirstChoice = -1;
  const node = registration(() => urls, (on) => {
    if (on && eventsAtFirstChoice < 0) eventsAtFirstChoice = a.events.length;
    found.push(on);
  });
  t.teardown(() => node.stop());
  node.start();

  await eventually('two heartbeats at the first registry', () => a.heartbeats.length >= 2);
  t.equal(eventsAtFirstChoice, 0, 'onRegistry(true) (the advertisement withdrawn) before the registry is contacted');
  t.same(a.invalid, [], 'every body valid');
  t.ok(cluster.get('sender')?.size === 2 && cluster.get('flow')?.size === 2, 'node, device, two sources, flows and senders registered');
  await eventually('the node on a', () => node.registry === a.url);
  t.equal(node.registry, a.url);

  a.setUnavailable(true);
  await eventually('a heartbeat at the second registry', () => b.heartbeats.length >= 1);
  t.match(b.events[0], { method: 'POST', path: /\/health\/nodes\//, status: 200 }, 'its first request: a heartbeat, answered 200');
  t.same(nodePosts(b), [], 'nothing re-registered at the second registry');
  await eventually('the node on b', () => node.registry === b.url);
  t.equal(node.registry, b.url);

  b.setUnavailable(true);
  await eventually('a heartbeat at the registry after the one that times out', () => d.heartbeats.length >= 1);
  t.match(d.events[0], { method: 'POST', path: /\/health\/nodes\//, status: 200 }, 'a heartbeat first');
  t.same(nodePosts(d), [], 'nothing re-registered');
  await eventually('the node on d', () => node.registry === d.url);
  t.equal(node.registry, d.url);
  t.notOk(found.includes(false), 'never without a registry: no advertisement during the fail-overs');

  // A registry outside the cluster: its 404 to the heartbeat registers everything there.
  urls = [outside.url];
  d.setUnavailable(true);
  await eventually('registered with the registry outside the cluster', () => outside.heartbeats.length >= 1);
  t.match(heartbeatsOf(outside)[0], { status: 404 }, 'the first heartbeat: 404');
  t.equal(nodePosts(outside).length, 8, 'then node, device, two sources, two flows, two senders POSTed');
  t.same(outside.invalid, []);
});

void t.test('a 200 to the first registration: the stale node DELETEd, then registered again', async (t) => {
  const model = testModel();
  const registry = await startTestRegistry();
  t.teardown(() => registry.close());
  // The registry still holds the node from an earlier run of the engine.
  registry.resources.set('node', new Map([[model.nodeId, { ...model.snapshot().node }]]));
  const node = registration(() => [registry.url]);
  t.teardown(() => node.stop());
  node.start();
  await eventually('a heartbeat', () => registry.heartbeats.length >= 1);
  const nodeRequests = registry.events.filter((e) => e.path.endsWith('/resource') ? registry.events.indexOf(e) < 3 : e.path.includes('/resource/nodes/'));
  t.match(nodeRequests.slice(0, 3), [
    { method: 'POST', status: 200 },
    { method: 'DELETE', path: new RegExp(`/resource/nodes/${model.nodeId}$`), status: 204 },
    { method: 'POST', status: 201 },
  ], 'POST 200, DELETE the node, POST 201');
  t.equal(registry.events.filter((e) => e.method === 'DELETE').length, 1, 'only the node DELETEd');
  t.equal(registry.resources.get('sender')?.size, 2, 'everything registered after it');
});
