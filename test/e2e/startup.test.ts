/**
 * The first milliseconds after start: creates sent as soon as the engine answers, on a fresh
 * state folder and on one with stored pipelines. Nothing fails, every pipeline has one real
 * gst-launch-1.0 child (counted by the engine's instance mark), none after DELETE, and the list
 * and health are complete from the first answer.
 */
import t, { type Test } from 'tap';
import type { PipelineView } from '../../src/pipelines/registry.js';
import { api, eventually, gstLaunchChildren, startEngine, TEST_SRT_LATENCY_MS, type EngineProcess } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';

const body = (port: number) => ({
  name: `early ${port}`,
  input: { type: 'srt', port, latency: TEST_SRT_LATENCY_MS },
  processing: [],
  output: { type: 'rtp', host: '127.0.0.1', port: 9 },
});

/** Sends the first request as soon as the REST port accepts, then returns how long that took. */
async function firstAnswer(what: () => Promise<void>): Promise<number> {
  const started = Date.now();
  for (;;) {
    try {
      await what();
      return Date.now() - started;
    } catch (error) {
      if (!/fetch failed|ECONNREFUSED/.test(String((error as Error).cause ?? error))) throw error;
      if (Date.now() - started > 15_000) throw new Error('the engine did not answer in 15 s');
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }
}

/** Waits until the engine has exactly `n` children, then checks they stay `n` for a while. */
async function expectChildren(t: Test, engine: EngineProcess, n: number, what: string): Promise<void> {
  await eventually(async () => ((await gstLaunchChildren(engine.stateDir)).length === n ? true : undefined), 20_000, `${n} children (${what})`);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  t.equal((await gstLaunchChildren(engine.stateDir)).length, n, `${what}: exactly ${n} gst-launch-1.0 children, still after 2 s`);
}

void t.test('creates in the first milliseconds on a fresh state folder', async (t) => {
  const engine = await startEngine(t, { waitForReady: false });
  const ports = await Promise.all(Array.from({ length: 6 }, () => freeUdpPort()));
  let first: { status: number; text: string } | undefined;
  const ms = await firstAnswer(async () => {
    const res = await api(engine, 'POST', '/api/v1/pipelines', body(ports[0] ?? 0));
    first = { status: res.status, text: res.text };
  });
  const rest = await Promise.all(ports.slice(1).map((port) => api<PipelineView>(engine, 'POST', '/api/v1/pipelines', body(port))));
  const ready = await engine.waitForLog((l) => l.event === 'ready');
  t.comment(`first create answered ${ms} ms after spawn (engine ready ${String(ready.process_ms)} ms into its process): ${first?.status}; states at creation: ${rest.map((r) => r.body.state).join(', ')}`);
  t.equal(first?.status, 201, `the first create succeeds (${first?.text ?? ''})`);
  t.same(rest.map((r) => r.status), rest.map(() => 201), 'every early create succeeds');
  const list = await api<{ pipelines: PipelineView[] }>(engine, 'GET', '/api/v1/pipelines');
  t.equal(list.body.pipelines.length, 6, 'the list has them all');
  t.notOk(engine.logs.some((l) => l.level >= 50), 'no error in the log');
  await expectChildren(t, engine, 6, 'fresh state folder');
  for (const p of list.body.pipelines) t.equal((await api(engine, 'DELETE', `/api/v1/pipelines/${p.id}`)).status, 204);
  t.same(await gstLaunchChildren(engine.stateDir), [], 'no child after DELETE');
});

void t.test('an engine with stored pipelines: list and health complete from the first answer, one child each', async (t) => {
  const stored = await startEngine(t);
  const storedPorts = await Promise.all(Array.from({ length: 5 }, () => freeUdpPort()));
  for (const port of storedPorts) t.equal((await api(stored, 'POST', '/api/v1/pipelines', body(port))).status, 201);
  stored.process.kill('SIGTERM');
  t.same(await stored.exited, [0, null], 'the first engine stopped cleanly');

  const engine = await startEngine(t, { configFile: stored.configFile, restPort: stored.restPort, waitForReady: false });
  let firstList: PipelineView[] = [];
  const ms = await firstAnswer(async () => {
    firstList = (await api<{ pipelines: PipelineView[] }>(engine, 'GET', '/api/v1/pipelines')).body.pipelines;
  });
  const early = await Promise.all(Array.from({ length: 3 }, () => freeUdpPort()));
  const [health, ...created] = await Promise.all([
    api<{ status: string }>(engine, 'GET', '/health'),
    ...early.map((port) => api<PipelineView>(engine, 'POST', '/api/v1/pipelines', body(port))),
  ]);
  t.comment(`first list ${ms} ms after spawn, states ${firstList.map((p) => p.state).join(', ')}; early creates: ${created.map((r) => `${r.status} ${r.body.state}`).join(', ')}`);
  t.equal(firstList.length, 5, 'the very first list has every stored pipeline');
  t.equal(health?.status, 200);
  t.equal(health?.body.status, 'healthy');
  t.same(created.map((r) => r.status), [201, 201, 201], 'creates in the start-up window succeed');
  await expectChildren(t, engine, 8, 'stored + early');
  t.notOk(engine.logs.some((l) => /Cannot bind/.test(String(l.msg))), 'no child fought another for its port');

  // A pipeline created in the window is deleted: its one child goes, and the port is free again.
  const victim = created[0]?.body;
  t.ok(victim !== undefined);
  if (victim === undefined) return;
  t.equal((await api(engine, 'DELETE', `/api/v1/pipelines/${victim.id}`)).status, 204);
  await expectChildren(t, engine, 7, 'after one DELETE');
  const again = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', body(victim.input.port));
  t.equal(again.status, 201, 'the freed port can be used at once');
  await expectChildren(t, engine, 8, 'after the create on the freed port');
  const list = await api<{ pipelines: PipelineView[] }>(engine, 'GET', '/api/v1/pipelines');
  await eventually(async () => {
    const now = await api<{ pipelines: PipelineView[] }>(engine, 'GET', '/api/v1/pipelines');
    return now.body.pipelines.every((p) => p.state === 'running') ? true : undefined;
  }, 20_000, 'every pipeline running');
  for (const p of list.body.pipelines) t.equal((await api(engine, 'DELETE', `/api/v1/pipelines/${p.id}`)).status, 204);
  t.same(await gstLaunchChildren(engine.stateDir), [], 'no child after DELETE');
});
