/**
 * The NMOS node end to end with a real engine (the shipped bundle) and two test registries on
 * 127.0.0.1 (test/helpers/nmos-registry.ts):
 * - every Node API answer (base, self, devices, sources, flows, senders, receivers, single
 *   resources, a 404) validates against the official IS-04 v1.3 schemas;
 * - every Registration API body the engine POSTs validates (the registry checks it);
 * - heartbeats about every 5 s; a 404 heartbeat: everything registered again; pipelines created
 *   and deleted appear in and go from the registry; registry A stops: the node moves to B; a
 *   clean stop DELETEs the node.
 * Intervals are bounded loosely (4-8 s for a 5 s heartbeat): the machine is loaded and shared.
 */
import t from 'tap';
import { api, createPipeline, eventually, startEngine } from '../helpers/engine-process.js';
import { nmosSchemas } from '../helpers/nmos-schemas.js';
import { startTestRegistry, type TestRegistry } from '../helpers/nmos-registry.js';
import { freeTcpPort, freeUdpPort } from '../helpers/ports.js';

interface Resource {
  id: string;
  version: string;
  [field: string]: unknown;
}

const NODE = '/x-nmos/node/v1.3';

async function getJson(base: string, path: string): Promise<{ status: number; body: unknown; headers: Headers }> {
  const response = await fetch(`${base}${path}`);
  return { status: response.status, body: (await response.json()), headers: response.headers };
}

function senderIds(registry: TestRegistry): string[] {
  return [...(registry.resources.get('sender')?.keys() ?? [])];
}

void t.test('NMOS node: Node API, registration, heartbeats, re-registration, fail-over', async (t) => {
  const schemas = nmosSchemas('is-04');
  const a = await startTestRegistry();
  const b = await startTestRegistry();
  t.teardown(() => a.close());
  t.teardown(() => b.close());
  const nmosPort = await freeTcpPort();
  const engine = await startEngine(t, {
    extraToml: ['[nmos]', 'enabled = true', `http_port = ${nmosPort}`, `registries = ["${a.url}", "${b.url}"]`, 'label = "test node"'].join('\n'),
  });
  const base = `http://127.0.0.1:${nmosPort}`;
  const first = await createPipeline(engine, { name: 'NMOS one', srtPort: await freeUdpPort() });
  const second = await createPipeline(engine, { name: 'NMOS two', srtPort: await freeUdpPort() });

  await t.test('every Node API answer validates against IS-04 v1.3', async (t) => {
    const checks: [string, string][] = [
      [`${NODE}/`, 'nodeapi-base.json'],
      [`${NODE}/self`, 'node.json'],
      [`${NODE}/devices`, 'devices.json'],
      [`${NODE}/sources`, 'sources.json'],
      [`${NODE}/flows`, 'flows.json'],
      [`${NODE}/senders`, 'senders.json'],
      [`${NODE}/receivers`, 'receivers.json'],
    ];
    for (const [path, schema] of checks) {
      const res = await getJson(base, path);
      t.equal(res.status, 200, `${path}: 200`);
      t.same(schemas.errors(schema, res.body), [], `${path} validates against ${schema}`);
      t.equal(res.headers.get('access-control-allow-origin'), '*', `${path}: CORS`);
    }
    const senders = (await getJson(base, `${NODE}/senders`)).body as Resource[];
    t.equal(senders.length, 2, 'a sender per pipeline');
    t.same((await getJson(base, `${NODE}/receivers`)).body, [], 'no receivers (SRT inputs are not NMOS receivers)');
    for (const [collection, schema] of [['devices', 'device.json'], ['sources', 'source.json'], ['flows', 'flow.json'], ['senders', 'sender.json']] as const) {
      for (const resource of (await getJson(base, `${NODE}/${collection}`)).body as Resource[]) {
        const single = await getJson(base, `${NODE}/${collection}/${resource.id}`);
        t.same(schemas.errors(schema, single.body), [], `${collection}/${resource.id} validates against ${schema}`);
      }
    }
    const flows = (await getJson(base, `${NODE}/flows`)).body as Resource[];
    t.same(flows.map((f) => [f.media_type, f.bit_depth, f.sample_rate]), [['audio/L24', 24, { numerator: 48000 }], ['audio/L24', 24, { numerator: 48000 }]], 'L24 48 kHz flows');
    const missing = await getJson(base, `${NODE}/senders/00000000-0000-4000-8000-000000000000`);
    t.equal(missing.status, 404);
    t.same(schemas.errors('error.json', missing.body), [], 'the 404 body validates against error.json');
    const sender = senders[0]!;
    const sdp = await fetch(String(sender.manifest_href));
    t.equal(sdp.status, 200, 'manifest_href answers');
    t.match(await sdp.text(), /^v=0\r\n[\s\S]*a=rtpmap:96 L24\/48000\/2/, 'the manifest is the SDP');

    // Versions: unchanged while nothing changes, a new one when the pipeline changes.
    const before = (await getJson(base, `${NODE}/senders/${sender.id}`)).body as Resource;
    t.equal(((await getJson(base, `${NODE}/senders/${sender.id}`)).body as Resource).version, before.version, 'version stays while nothing changes');
    const patched = await api(engine, 'PATCH', `/api/v1/pipelines/${first.id}`, { output: { port: 5999 } });
    t.equal(patched.status, 200, `PATCH output.port: ${patched.text}`);
    const changed = await eventually(async () => {
      const all = (await getJson(base, `${NODE}/senders`)).body as Resource[];
      return all.find((s) => String(s.description).endsWith(':5999'));
    }, 5000, 'the sender shows the new port');
    t.not(changed.version, before.version, 'a new version after the change');
  });

  await t.test('registration: every body valid, heartbeats, 404, pipelines go, fail-over', async (t) => {
    await eventually(() => (senderIds(a).length === 2 ? true : undefined), 10_000, 'both senders registered with A');
    t.equal(a.resources.get('node')?.size, 1, 'the node');
    t.equal(a.resources.get('device')?.size, 1, 'one device');
    t.equal(a.resources.get('source')?.size, 2, 'a source per pipeline');
    t.equal(a.resources.get('flow')?.size, 2, 'a flow per pipeline');
    // Order of the first registration: node, device, then sources, flows, senders.
    const posts = a.events.filter((e) => e.method === 'POST' && e.path.endsWith('/resource'));
    t.ok(posts.length >= 8, 'eight POSTs at least');

    await eventually(() => (a.heartbeats.length >= 3 ? true : undefined), 25_000, 'three heartbeats');
    const gaps = a.heartbeats.slice(1).map((at, i) => at - a.heartbeats[i]!);
    t.comment(`heartbeat intervals (ms, registry side): ${gaps.join(', ')}`);
    for (const gap of gaps) t.ok(gap >= 4000 && gap <= 8000, `heartbeat interval ${gap} ms within 4-8 s`);

    a.forget();
    await eventually(() => (senderIds(a).length === 2 && a.resources.get('node')?.size === 1 ? true : undefined), 12_000, 're-registered after a 404 heartbeat');
    t.ok(a.events.some((e) => e.path.includes('/health/nodes/') && e.status === 404), 'a heartbeat was answered 404');

    const gone = await api(engine, 'DELETE', `/api/v1/pipelines/${second.id}`);
    t.equal(gone.status, 204);
    await eventually(() => (senderIds(a).length === 1 && a.resources.get('flow')?.size === 1 && a.resources.get('source')?.size === 1 ? true : undefined),
      10_000, 'the deleted pipeline\'s sender, flow and source DELETEd');
    t.pass('the deleted pipeline\'s sender, flow and source are gone from the registry');

    await a.close();
    await eventually(() => (senderIds(b).length === 1 && b.resources.get('node')?.size === 1 ? true : undefined), 20_000, 'registered with B after A stopped');
    await eventually(() => (b.heartbeats.length >= 1 ? true : undefined), 10_000, 'heartbeats go to B');
    t.same([...a.invalid, ...b.invalid], [], 'every Registration API body validated against the IS-04 v1.3 schemas');

    engine.process.kill('SIGTERM');
    await engine.exited;
    t.equal(b.resources.get('node')?.size ?? 0, 0, 'a clean stop DELETEs the node');
  });
});
