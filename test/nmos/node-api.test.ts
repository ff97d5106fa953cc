/**
 * The Node API and Connection API routes (src/nmos/node-api.ts, connection-api.ts) over a model of
 * two outputs, one with an ST 2022-7 leg (test/helpers/nmos-model.ts), asked through fastify's
 * inject: every path answers GET and HEAD alike with and without the trailing slash; JSON answers
 * carry `application/json` without a charset; transporttype is a JSON string; each sender's
 * constraints validate against IS-05's constraints-schema-rtp and have the keys of every
 * transport_params leg; active has no `auto` (source_port: the port udpsink binds); the IS-04
 * sender's interface_bindings has one entry per leg.
 */
import t from 'tap';
import { RTP_SOURCE_PORT } from '../../src/spec/rtp-format.js';
import { nmosSchemas } from '../helpers/nmos-schemas.js';
import { testNodeApi } from '../helpers/nmos-model.js';

const NODE = '/x-nmos/node/v1.3';
const CONNECTION = '/x-nmos/connection/v1.1';

interface Leg {
  [key: string]: unknown;
}

void t.test('Node and Connection API: trailing slash, HEAD, Content-Type, transporttype, constraints, active, bindings', async (t) => {
  const app = testNodeApi();
  t.teardown(() => app.close());
  const get = async (url: string, method: 'GET' | 'HEAD' = 'GET') => app.inject({ method, url });
  const json = async <T>(url: string): Promise<T> => (await get(url)).json<T>();

  const senders = await json<{ id: string; interface_bindings: string[]; tags: Record<string, string[]> }[]>(`${NODE}/senders`);
  const [one, two] = ['pl_one', 'pl_two'].map((id) => senders.find((s) => s.tags['urn:x-audio-engine:id']?.[0] === id)!);
  const resources = await Promise.all(['devices', 'sources', 'flows'].map(async (c) => [c, (await json<{ id: string }[]>(`${NODE}/${c}`))[0]!.id] as const));
  const paths = [
    '', '/x-nmos', '/x-nmos/node', NODE, `${NODE}/self`,
    ...['devices', 'sources', 'flows', 'senders', 'receivers'].map((c) => `${NODE}/${c}`),
    ...resources.map(([c, id]) => `${NODE}/${c}/${id}`), `${NODE}/senders/${one!.id}`,
    '/x-nmos/connection', CONNECTION, `${CONNECTION}/single`, `${CONNECTION}/single/senders`, `${CONNECTION}/single/receivers`,
    `${CONNECTION}/bulk`, `${CONNECTION}/bulk/senders`, `${CONNECTION}/bulk/receivers`,
    ...[one!.id, two!.id].flatMap((id) => ['', '/constraints', '/staged', '/active', '/transportfile', '/transporttype'].map((r) => `${CONNECTION}/single/senders/${id}${r}`)),
  ];

  await t.test('every path: GET and HEAD alike with and without the trailing slash', async (t) => {
    for (const path of paths) {
      const bare = await get(path === '' ? '/' : path);
      const slash = await get(`${path}/`);
      t.equal(slash.statusCode, bare.statusCode, `${path}/: the same status (${bare.statusCode})`);
      t.equal(slash.body, bare.body, `${path}/: the same body`);
      t.not(bare.statusCode, 404, `${path}: found`);
      for (const url of [path === '' ? '/' : path, `${path}/`]) {
        const head = await get(url, 'HEAD');
        t.equal(head.statusCode, bare.statusCode, `HEAD ${url}: as GET`);
        t.equal(head.headers['content-type'], bare.headers['content-type'], `HEAD ${url}: the Content-Type of GET`);
        t.equal(head.body, '', `HEAD ${url}: no body`);
      }
    }
    t.equal((await get(`${NODE}/senders/00000000-0000-4000-8000-000000000000/`)).statusCode, 404, 'an unknown sender is still a 404');
  });

  await t.test('JSON answers: application/json without a charset parameter', async (t) => {
    for (const path of paths.filter((p) => !p.endsWith('/transportfile'))) {
      const answer = await get(path === '' ? '/' : path);
      if (answer.statusCode === 405) continue; // bulk GET: an error body, checked below
      t.equal(answer.headers['content-type'], 'application/json', `${path}`);
    }
    t.equal((await get(`${CONNECTION}/bulk/senders`)).headers['content-type'], 'application/json', 'an error too');
    t.equal((await get(`${NODE}/nothing`)).headers['content-type'], 'application/json', 'a 404 too');
    t.equal((await get(`${CONNECTION}/single/senders/${one!.id}/transportfile`)).headers['content-type'], 'application/sdp', 'the SDP is not JSON');
  });

  await t.test('transporttype is a JSON string (IS-05 transporttype-response-schema)', async (t) => {
    const is05 = nmosSchemas('is-05');
    const answer = await get(`${CONNECTION}/single/senders/${one!.id}/transporttype`);
    t.equal(answer.body, '"urn:x-nmos:transport:rtp"', 'quoted: JSON');
    t.equal(answer.json(), 'urn:x-nmos:transport:rtp');
    t.same(is05.errors('transporttype-response-schema.json', answer.json()), []);
  });

  await t.test('constraints: constraints-schema-rtp, the keys of every leg; active: no auto', async (t) => {
    const is05 = nmosSchemas('is-05');
    for (const [sender, legs] of [[one!, 1], [two!, 2]] as const) {
      const base = `${CONNECTION}/single/senders/${sender.id}`;
      const constraints = await json<Leg[]>(`${base}/constraints`);
      t.equal(constraints.length, legs, `${legs} constraint object(s)`);
      t.same(is05.errors('constraints-schema.json', constraints), [], 'constraints-schema');
      for (const leg of constraints) t.same(is05.errors('constraints-schema-rtp.json', leg), [], 'constraints-schema-rtp');
      for (const resource of ['staged', 'active'] as const) {
        const body = await json<{ transport_params: Leg[] }>(`${base}/${resource}`);
        t.same(is05.errors('sender-response-schema.json', body), [], `${resource}: sender-response-schema`);
        t.equal(body.transport_params.length, legs, `${resource}: one entry per leg`);
        body.transport_params.forEach((leg, i) => {
          t.same(Object.keys(leg).sort(), Object.keys(constraints[i]!).sort(), `${resource} leg ${i}: the keys of its constraints`);
        });
      }
      const active = await json<{ transport_params: Leg[] }>(`${base}/active`);
      for (const leg of active.transport_params) {
        t.notOk(Object.values(leg).includes('auto'), 'no auto in active');
        t.equal(leg.source_port, RTP_SOURCE_PORT, 'source_port: the port every leg sends from');
      }
    }
  });

  await t.test('interface_bindings: one entry per transport_params leg, each leg\'s interface', async (t) => {
    t.same(one!.interface_bindings, ['veth0']);
    t.same(two!.interface_bindings, ['veth0', 'veth1']);
    const self = await json<{ interfaces: { name: string; port_id: string }[] }>(`${NODE}/self`);
    t.same(self.interfaces.map((i) => [i.name, i.port_id]), [['veth0', '02-00-00-00-00-01'], ['veth1', '02-00-00-00-00-02']], 'the node lists both interfaces');
  });
});
