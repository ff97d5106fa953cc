/**
 * The rules of a change (PATCH /api/v1/pipelines/{id}, gRPC UpdatePipeline) against a real engine
 * and real children: live vs restart, a bad value changes nothing (response, stored record,
 * child), If-Match, a child that does not answer (503, nothing stored), kill -9 of the engine
 * right after a 200, and the same over gRPC.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import t from 'tap';
import type { PipelineView } from '../../src/pipelines/registry.js';
import { api, createPipeline, isAlive, isRunning, startEngine, waitForPipeline } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { grpcPortOf, TestClient } from '../grpc/client.js';

type Changed = PipelineView & { applied: string };
interface ErrorBody { statusCode: number; code: string; message: string }

const PROCESSING = [
  { plugin: 'loudness-normalize', target: -23 },
  { plugin: 'eq', bands: [{ freq: 200, gain: 0 }] },
];

function stored(stateDir: string, id: string): { version?: number; spec: { processing: unknown[]; output: unknown } } {
  return JSON.parse(readFileSync(path.join(stateDir, 'pipelines', `${id}.json`), 'utf8')) as { version?: number; spec: { processing: unknown[]; output: unknown } };
}

function cmdline(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
}

void t.test('changes: live, restart, refused, If-Match, an unanswering child, kill -9 after a 200, gRPC', async (t) => {
  const engine = await startEngine(t);
  const { id } = await createPipeline(engine, { srtPort: await freeUdpPort(), processing: PROCESSING });
  const running = await waitForPipeline(engine, id, isRunning, 'running');
  const pid = running.pid ?? -1;
  const url = `/api/v1/pipelines/${id}`;

  const got = await api<PipelineView>(engine, 'GET', url);
  t.equal(got.headers.get('etag'), '"1"', 'ETag of a new pipeline');
  t.equal(got.body.version, 1);

  await t.test('a bad value or an unknown field: 400 naming the field, nothing changed', async (t) => {
    const fileBefore = readFileSync(path.join(engine.stateDir, 'pipelines', `${id}.json`), 'utf8');
    const cases: [unknown, RegExp][] = [
      [{ processing: [{ target: -3 }, {}] }, /^body\/processing\/0\/target must be <= -5/],
      [{ processing: [{}, { bands: [{ freq: 200, gain: 30 }] }] }, /^body\/processing\/1\/bands\/0\/gain must be <= 24/],
      [{ processing: [{}, { bands: [{ freq: 200, gain: '6' }] }] }, /^body\/processing\/1\/bands\/0\/gain must be number/],
      [{ processing: [{ target: -16, volume: 3 }, {}] }, /^body\/processing\/0\/volume is not a known field/],
      [{ colour: 'red' }, /^body\/colour is not a known field/],
      [{ id: 'pl_other' }, /^body\/id is not a known field/],
      [{ name: '' }, /^body\/name must NOT have fewer than 1 characters/],
      [[1, 2], /^body must be an object/],
    ];
    for (const [body, message] of cases) {
      const res = await api<ErrorBody>(engine, 'PATCH', url, body);
      t.equal(res.status, 400, `${JSON.stringify(body)}: ${res.text}`);
      t.equal(res.body.code, 'VALIDATION_FAILED');
      t.match(res.body.message, message);
    }
    t.equal(readFileSync(path.join(engine.stateDir, 'pipelines', `${id}.json`), 'utf8'), fileBefore, 'the stored record is unchanged');
    const after = await api<PipelineView>(engine, 'GET', url);
    t.same(after.body.processing, running.processing, 'the pipeline is unchanged');
    t.equal(after.body.pid, pid, 'the same child');
    t.equal(after.body.version, 1);
    t.notOk(engine.logs.some((l) => l.event === 'updated'), 'nothing was sent to the child');
    t.ok(cmdline(pid).includes('target=-23'), 'the child runs as created');
  });

  await t.test('If-Match: a stale version is 412, the current one applies', async (t) => {
    const stale = await api<ErrorBody>(engine, 'PATCH', url, { name: 'renamed' }, { 'if-match': '"7"' });
    t.equal(stale.status, 412, stale.text);
    t.equal(stale.body.code, 'VERSION_MISMATCH');
    const ok = await api<Changed>(engine, 'PATCH', url, { name: 'renamed', processing: [{ target: -20 }, {}] }, { 'if-match': '"1"', 'content-type': 'application/merge-patch+json' });
    t.equal(ok.status, 200, ok.text);
    t.equal(ok.body.applied, 'live');
    t.equal(ok.body.name, 'renamed');
    t.equal(ok.headers.get('etag'), '"2"');
    t.equal(ok.body.pid, pid, 'same child');
    t.equal(stored(engine.stateDir, id).version, 2, 'stored as version 2');
    const again = await api<ErrorBody>(engine, 'PATCH', url, { name: 'again' }, { 'if-match': '"1"' });
    t.equal(again.status, 412, 'the old version no longer matches');
  });

  await t.test('concurrent changes are applied one after the other', async (t) => {
    const results = await Promise.all([-21, -19, -17].map((target) => api<Changed>(engine, 'PATCH', url, { processing: [{ target }, {}] })));
    t.same(results.map((r) => r.status), [200, 200, 200]);
    t.same(results.map((r) => r.body.version).sort(), [3, 4, 5], 'each got its own version');
    const last = results.find((r) => r.body.version === 5);
    const final = await api<PipelineView>(engine, 'GET', url);
    t.same(final.body.processing[0], last?.body.processing[0], 'the last one serialised is what the pipeline has');
  });

  await t.test('a child that does not answer: 503 after one retry, nothing stored, the child restarted from the stored spec', async (t) => {
    const before = await api<PipelineView>(engine, 'GET', url);
    const fileBefore = readFileSync(path.join(engine.stateDir, 'pipelines', `${id}.json`), 'utf8');
    const childPid = before.body.pid ?? -1;
    process.kill(childPid, 'SIGSTOP');
    t.teardown(() => {
      if (isAlive(childPid)) process.kill(childPid, 'SIGCONT');
    });
    const started = Date.now();
    const res = await api<ErrorBody>(engine, 'PATCH', url, { processing: [{ target: -10 }, {}] });
    const took = Date.now() - started;
    t.equal(res.status, 503, res.text);
    t.equal(res.body.code, 'ENGINE_UNAVAILABLE');
    t.match(res.body.message, /did not answer/);
    // At least the control channel's two 1 s timeouts; the upper bound only says the answer did
    // not wait on the stopped child beyond them (timers of a loaded machine run late: no figure).
    t.ok(took >= 1900 && took < 15_000, `answered after ${took} ms (1 s, one retry, 1 s)`);
    t.equal(readFileSync(path.join(engine.stateDir, 'pipelines', `${id}.json`), 'utf8'), fileBefore, 'nothing stored');
    const back = await waitForPipeline(engine, id, (p) => isRunning(p) && p.pid !== childPid, 'a new child');
    t.same(back.processing, before.body.processing, 'the pipeline keeps its stored parameters');
    t.ok(cmdline(back.pid ?? -1).includes(`target=${String((before.body.processing[0] as { target: number }).target)}`), 'the new child runs the stored target');
  });

  await t.test('a structural change restarts the child and says so; same id', async (t) => {
    const before = await api<PipelineView>(engine, 'GET', url);
    const res = await api<Changed>(engine, 'PATCH', url, { output: { ttl: 9 } });
    t.equal(res.status, 200, res.text);
    t.equal(res.body.applied, 'restart');
    t.equal(res.body.id, id);
    const after = await waitForPipeline(engine, id, (p) => isRunning(p) && p.pid !== before.body.pid, 'the new child');
    t.ok(cmdline(after.pid ?? -1).includes('ttl-mc=9'), 'the new child has the new TTL');
    t.equal(stored(engine.stateDir, id).spec.output && (stored(engine.stateDir, id).spec.output as { ttl: number }).ttl, 9);
    const removed = await api<Changed>(engine, 'PATCH', url, { processing: [{}] });
    t.equal(removed.body.applied, 'restart', 'removing a step restarts');
    t.equal(removed.body.processing.length, 1);
  });

  await t.test('kill -9 of the engine right after a 200 keeps the change', async (t) => {
    const res = await api<Changed>(engine, 'PATCH', url, { processing: [{ target: -16, true_peak: -2 }] });
    t.equal(res.status, 200, res.text);
    t.equal(res.body.applied, 'live');
    engine.process.kill('SIGKILL');
    await engine.exited;
    const second = await startEngine(t, { configFile: engine.configFile, restPort: engine.restPort });
    const back = await waitForPipeline(second, id, isRunning, 'running again');
    t.same(back.processing, [{ plugin: 'loudness-normalize', target: -16, true_peak: -2 }]);
    const argv = cmdline(back.pid ?? -1);
    t.ok(argv.includes('target=-16') && argv.includes('true-peak=-2'), 'the new child starts with the new values');

    await t.test('gRPC UpdatePipeline', async (t) => {
      const client = new TestClient(grpcPortOf(second));
      t.teardown(() => client.close());
      const version = back.version;
      const live = await client.update({ id, name: 'over gRPC', processing: { steps: [{ plugin: '', target: -18, bands: [] }] }, if_version: version });
      t.equal(live.applied, 'live');
      t.equal(live.pipeline?.name, 'over gRPC');
      t.equal(live.pipeline?.processing[0]?.target, -18);
      t.equal(live.pipeline?.version, version + 1);
      t.equal(live.pipeline?.pid, back.pid ?? undefined, 'same child');
      await t.rejects(client.update({ id, name: 'stale', if_version: version }), { code: status.FAILED_PRECONDITION });
      await t.rejects(client.update({ id, processing: { steps: [{ plugin: '', target: 3, bands: [] }] } }), {
        code: status.INVALID_ARGUMENT,
        details: /^processing\.0\.target must be <= -5/,
      });
      await t.rejects(client.update({ id: 'pl_000000000000' }), { code: status.NOT_FOUND });
    });
  });
});
