/**
 * The REST contract against a real engine process: status codes, error bodies and headers of
 * decisions.md. Pipelines made here run real gst-launch-1.0 children (output to loopback).
 */
import { createSocket } from 'node:dgram';
import { createHash } from 'node:crypto';
import t from 'tap';
import type { PipelineView } from '../../src/pipelines/registry.js';
import { api, eventually, startEngine, type EngineProcess } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { EXAMPLE } from '../fixtures/example.js';

interface ErrorBody { statusCode: number; code: string; error: string; message: string }

async function request(port: number, output = 5004): Promise<typeof EXAMPLE> {
  return { ...structuredClone(EXAMPLE), input: { type: 'srt', port, latency: 120 }, processing: [], output: { type: 'rtp', host: '127.0.0.1', port: output } };
}

void t.test('REST without auth', async (t) => {
  const engine: EngineProcess = await startEngine(t, { extraToml: 'max_pipelines = 3' });

  void t.test('health on both paths', async (t) => {
    for (const path of ['/health', '/api/v1/health']) {
      const res = await api<Record<string, string>>(engine, 'GET', path);
      t.equal(res.status, 200, `${path}: ${res.text}`);
      t.equal(res.body.status, 'healthy');
      t.match(res.body.version, /^\d+\.\d+\.\d+$/);
      t.match(res.body.uptime, /^\d+h \d+m$/);
    }
  });

  void t.test('create, get, list, delete', async (t) => {
    const port = await freeUdpPort();
    const created = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', await request(port));
    t.equal(created.status, 201);
    t.match(created.body.id, /^pl_[0-9A-Za-z]{12,}$/);
    t.equal(created.headers.get('location'), `/api/v1/pipelines/${created.body.id}`);
    t.equal(created.body.name, 'Morning Show');
    t.equal(created.body.status, 'active');
    t.match(created.body.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    t.same(created.body.input, { type: 'srt', port, latency: 120 });
    t.same(created.body.output, { type: 'rtp', host: '127.0.0.1', port: 5004, ttl: 16, channels: 2, encoding: 'L24', ptime: 1, payload_type: 96, dscp: 34 });
    t.equal(created.body.restarts, 0);
    t.type(created.body.pid, 'number');

    const got = await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${created.body.id}`);
    t.equal(got.status, 200);
    t.equal(got.body.id, created.body.id);

    const second = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', await request(await freeUdpPort()));
    const list = await api<{ pipelines: PipelineView[] }>(engine, 'GET', '/api/v1/pipelines');
    t.same(list.body.pipelines.map((p) => p.id), [created.body.id, second.body.id], 'creation order');

    const pid = created.body.pid;
    const deleted = await api(engine, 'DELETE', `/api/v1/pipelines/${created.body.id}`);
    t.equal(deleted.status, 204);
    t.equal(deleted.text, '');
    t.throws(() => process.kill(pid ?? -1, 0), 'the child is gone when 204 is sent');
    t.equal((await api(engine, 'GET', `/api/v1/pipelines/${created.body.id}`)).status, 404);
    t.equal((await api(engine, 'DELETE', `/api/v1/pipelines/${created.body.id}`)).status, 404);
    t.equal((await api(engine, 'DELETE', `/api/v1/pipelines/${second.body.id}`)).status, 204);
  });

  void t.test('400 names the field, in fastify error shape', async (t) => {
    const port = await freeUdpPort();
    const bad = await request(port);
    (bad.input as Record<string, unknown>).port = 70000;
    const res = await api<ErrorBody>(engine, 'POST', '/api/v1/pipelines', bad);
    t.equal(res.status, 400);
    t.same(res.body, { statusCode: 400, code: 'VALIDATION_FAILED', error: 'Bad Request', message: 'body/input/port must be <= 65535' });
    const coerced = await request(port);
    (coerced.input as Record<string, unknown>).port = String(port);
    t.equal((await api<ErrorBody>(engine, 'POST', '/api/v1/pipelines', coerced)).body.message, 'body/input/port must be integer', 'no coercion');
    const unknown = { ...(await request(port)), colour: 'red' };
    t.equal((await api<ErrorBody>(engine, 'POST', '/api/v1/pipelines', unknown)).body.message, 'body/colour is not a known field');
    const plugin = { ...(await request(port)), processing: [{ plugin: 'reverb' }] };
    t.match((await api<ErrorBody>(engine, 'POST', '/api/v1/pipelines', plugin)).body.message, /reverb/);
    const list = await api<{ pipelines: PipelineView[] }>(engine, 'GET', '/api/v1/pipelines');
    t.equal(list.body.pipelines.length, 0, 'nothing half-made');
  });

  void t.test('bad JSON, non-JSON, too large', async (t) => {
    const broken = await api<ErrorBody>(engine, 'POST', '/api/v1/pipelines', '{"name":');
    t.equal(broken.status, 400);
    const text = await api<ErrorBody>(engine, 'POST', '/api/v1/pipelines', 'name=x', { 'content-type': 'text/plain' });
    t.equal(text.status, 415);
    t.equal(text.body.statusCode, 415);
    const form = await api<ErrorBody>(engine, 'POST', '/api/v1/pipelines', 'a=b', { 'content-type': 'application/x-www-form-urlencoded' });
    t.equal(form.status, 415);
    const big = { ...(await request(await freeUdpPort())), name: 'x', pad: 'y'.repeat(70 * 1024) };
    const large = await api<ErrorBody>(engine, 'POST', '/api/v1/pipelines', big);
    t.equal(large.status, 413);
    t.equal(large.body.error, 'Payload Too Large');
    // 3 MiB through Node's fetch, which is still sending when the 413 comes: it reads it
    // (test/http/body-limit.test.ts has curl, http.request and the connection's bounds).
    const huge = { ...big, pad: 'y'.repeat(3 * 1024 * 1024) };
    for (let i = 0; i < 3; i++) {
      const refused = await api<ErrorBody>(engine, 'POST', '/api/v1/pipelines', huge);
      t.equal(refused.status, 413);
      t.same(refused.body, { statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE', error: 'Payload Too Large', message: 'Request body is too large' });
    }
    t.equal((await api<{ pipelines: PipelineView[] }>(engine, 'GET', '/api/v1/pipelines')).body.pipelines.length, 0, 'nothing made');
  });

  void t.test('409 when the port is taken, by a pipeline or by another process', async (t) => {
    const port = await freeUdpPort();
    const first = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', await request(port));
    t.equal(first.status, 201);
    const again = await api<ErrorBody>(engine, 'POST', '/api/v1/pipelines', await request(port));
    t.equal(again.status, 409);
    t.equal(again.body.code, 'PORT_IN_USE');
    t.match(again.body.message, new RegExp(`input.port ${port} is already in use by pipeline ${first.body.id}`));

    const heldPort = await freeUdpPort();
    const holder = createSocket('udp4');
    await new Promise<void>((resolve) => holder.bind(heldPort, '0.0.0.0', resolve));
    t.teardown(() => holder.close());
    const held = await api<ErrorBody>(engine, 'POST', '/api/v1/pipelines', await request(heldPort));
    t.equal(held.status, 409);
    t.match(held.body.message, `input.port ${heldPort} is already in use by another process`);
    t.equal((await api(engine, 'DELETE', `/api/v1/pipelines/${first.body.id}`)).status, 204);
  });

  void t.test('429 past max_pipelines', async (t) => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', await request(await freeUdpPort()));
      t.equal(res.status, 201);
      ids.push(res.body.id);
    }
    const over = await api<ErrorBody>(engine, 'POST', '/api/v1/pipelines', await request(await freeUdpPort()));
    t.equal(over.status, 429);
    t.equal(over.body.code, 'PIPELINE_LIMIT_REACHED');
    for (const id of ids) await api(engine, 'DELETE', `/api/v1/pipelines/${id}`);
  });

  void t.test('404s and metrics', async (t) => {
    t.equal((await api(engine, 'GET', '/api/v1/pipelines/pl_doesnotexist00')).status, 404);
    t.equal((await api(engine, 'GET', '/api/v1/pipelines/..%2F..%2Fetc')).status, 404);
    const missing = await api<ErrorBody>(engine, 'GET', '/api/v1/nothing');
    t.equal(missing.status, 404);
    t.equal(missing.body.statusCode, 404);
    const port = await freeUdpPort();
    const made = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', await request(port));
    await eventually(async () => ((await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${made.body.id}`)).body.state === 'running' ? true : undefined), 10_000, 'running');
    const metrics = await api(engine, 'GET', '/api/v1/metrics');
    t.equal(metrics.status, 200);
    t.match(metrics.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    t.match(metrics.text, /audio_engine_process_cpu_seconds_total \d/);
    t.match(metrics.text, /audio_engine_process_resident_memory_bytes \d/);
    t.match(metrics.text, new RegExp(`audio_engine_pipeline_up\\{pipeline_id="${made.body.id}"\\} 1`));
    t.match(metrics.text, new RegExp(`audio_engine_pipeline_child_resident_memory_bytes\\{pipeline_id="${made.body.id}"\\} [1-9]\\d+`));
    t.match(metrics.text, new RegExp(`audio_engine_pipeline_child_cpu_seconds_total\\{pipeline_id="${made.body.id}"\\} \\d`));
    await api(engine, 'DELETE', `/api/v1/pipelines/${made.body.id}`);
    const after = await api(engine, 'GET', '/api/v1/metrics');
    t.notMatch(after.text, made.body.id, 'a deleted pipeline has no series');
  });
});

void t.test('REST with auth', async (t) => {
  const digest = createHash('sha256').update('key-two').digest('hex');
  const engine = await startEngine(t, { extraToml: `[auth]\nenabled = true\napi_keys = ["key-one", "sha256:${digest}"]` });
  const open = await api(engine, 'GET', '/health');
  t.equal(open.status, 200, 'health stays open');
  const none = await api<ErrorBody>(engine, 'GET', '/api/v1/pipelines');
  t.equal(none.status, 401);
  t.equal(none.headers.get('www-authenticate'), 'Bearer');
  t.same(none.body, { statusCode: 401, code: 'UNAUTHORIZED', error: 'Unauthorized', message: 'the Authorization: Bearer <key> header is required' });
  const wrong = await api<ErrorBody>(engine, 'GET', '/api/v1/pipelines', undefined, { authorization: 'Bearer nope' });
  t.equal(wrong.status, 401);
  t.equal((await api(engine, 'GET', '/api/v1/metrics')).status, 401);
  t.equal((await api(engine, 'POST', '/api/v1/pipelines', await request(await freeUdpPort()))).status, 401);
  t.equal((await api(engine, 'GET', '/api/v1/pipelines', undefined, { authorization: 'Bearer key-one' })).status, 200);
  t.equal((await api(engine, 'GET', '/api/v1/pipelines', undefined, { authorization: 'Bearer key-two' })).status, 200, 'a key given as its digest');
});
