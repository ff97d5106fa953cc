/**
 * The gRPC contract against a real engine process and a real @grpc/grpc-js client on a real
 * port: every RPC, every status code, auth on and off, StreamMetrics at the configured rate,
 * cancel and shutdown, server reflection, and pipelines shared with REST. Pipelines run real
 * gst-launch-1.0 children with RTP output to 127.0.0.1 only.
 */
import { createHash } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { create, fromBinary } from '@bufbuild/protobuf';
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { Client, credentials, status, type ServiceError } from '@grpc/grpc-js';
import t from 'tap';
import type { PipelineView } from '../../src/pipelines/registry.js';
import { api, eventually, isAlive, startEngine } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { createRequest, grpcPortOf, record, sleep, TestClient } from './client.js';

function isServiceError(error: unknown): error is ServiceError {
  return error instanceof Error && 'code' in error && 'details' in error;
}

/** The status of a failed call (fails the test when the call succeeded). */
async function failure(promise: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await promise;
  } catch (error) {
    if (isServiceError(error)) return { code: error.code, details: error.details };
    throw error;
  }
  throw new Error('the call succeeded; a failure was expected');
}

void t.test('gRPC without auth', async (t) => {
  const engine = await startEngine(t, { extraToml: 'max_pipelines = 3\nmetrics_interval_ms = 200' });
  const port = grpcPortOf(engine);
  const client = new TestClient(port);
  t.teardown(() => client.close());

  void t.test('GetHealth', async (t) => {
    const health = await client.health();
    t.equal(health.status, 'healthy');
    t.match(health.version, /^\d+\.\d+\.\d+$/);
    t.match(health.uptime, /^\d+h \d+m$/);
    t.equal(health.reason, '');
  });

  void t.test('CreatePipeline, ListPipelines, DeletePipeline', async (t) => {
    const inputPort = await freeUdpPort();
    const created = await client.create(createRequest(inputPort));
    t.match(created.id, /^pl_[0-9A-Za-z]{12,}$/);
    t.equal(created.name, 'Morning Show');
    t.equal(created.status, 'active');
    t.match(created.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    t.same(created.input, { type: 'srt', port: inputPort, latency: 120 }, 'absent latency: the default');
    t.same(created.output, { type: 'rtp', host: '127.0.0.1', port: 5004, ttl: 16, channels: 2, encoding: 'L24', ptime: 1, payload_type: 96, dscp: 34 }, 'absent ttl: the default');
    t.same(created.processing, [
      { plugin: 'loudness-normalize', target: -23, true_peak: -1, bands: [] },
      { plugin: 'eq', bands: [{ freq: 100, gain: -2, q: 1 }, { freq: 8000, gain: 1.5, q: 1 }] },
    ]);
    t.equal(created.restarts, 0);
    t.type(created.pid, 'number');
    t.match(created.state, /^(starting|running)$/);
    t.same(created.output_legs, [{ leg: 'primary', host: '127.0.0.1', port: 5004, state: created.state === 'running' ? 'sending' : 'idle' }], 'one leg, no interface, no error');

    const second = await client.create({ ...createRequest(await freeUdpPort()), name: 'Second' });
    const list = await client.list();
    t.same(list.pipelines.map((p) => p.id), [created.id, second.id], 'creation order');

    await client.delete(created.id);
    t.notOk(isAlive(created.pid ?? -1), 'the child is gone when DeletePipeline answers');
    t.same((await client.list()).pipelines.map((p) => p.id), [second.id]);
    t.match(await failure(client.delete(created.id)), { code: status.NOT_FOUND, details: `pipeline ${created.id} not found` });
    t.match(await failure(client.delete('pl_doesnotexist00')), { code: status.NOT_FOUND });
    t.match(await failure(client.delete('../../etc')), { code: status.NOT_FOUND });
    t.same(await failure(client.delete('')), { code: status.INVALID_ARGUMENT, details: 'id is required' });
    await client.delete(second.id);
  });

  void t.test('INVALID_ARGUMENT names the field, from the one validator', async (t) => {
    const port = await freeUdpPort();
    const base = createRequest(port);
    const cases: [string, Parameters<TestClient['create']>[0], string | RegExp][] = [
      ['port out of range', { ...base, input: { type: 'srt', port: 70000 } }, 'input.port must be <= 65535'],
      ['port absent', { ...base, input: { type: 'srt' } }, 'input.port is required'],
      ['port 0 is not absent', { ...base, input: { type: 'srt', port: 0 } }, 'input.port must be >= 1024'],
      ['latency', { ...base, input: { type: 'srt', port, latency: 10 } }, 'input.latency must be >= 20'],
      ['input type', { ...base, input: { type: 'udp', port } }, 'input.type must be "srt", got "udp"'],
      ['input absent', { name: 'x', processing: [], output: base.output }, 'input is required'],
      ['output absent', { name: 'x', processing: [], input: base.input }, 'output is required'],
      ['name empty', { ...base, name: '' }, /^name must NOT have fewer than 1 characters/],
      ['name with a control character', { ...base, name: 'a\u0007b' }, 'name has characters that are not allowed'],
      ['unknown plugin', { ...base, processing: [{ plugin: 'reverb', bands: [] }] }, /^processing\.0\.plugin must be one of .*"reverb"/],
      ['target', { ...base, processing: [{ plugin: 'loudness-normalize', target: 3, bands: [] }] }, 'processing.0.target must be <= -5'],
      ['target absent', { ...base, processing: [{ plugin: 'loudness-normalize', bands: [] }] }, 'processing.0.target is required'],
      ['gain absent is not 0 dB', { ...base, processing: [{ plugin: 'eq', bands: [{ freq: 100 }] }] }, 'processing.0.bands.0.gain is required'],
      ['eq without bands', { ...base, processing: [{ plugin: 'eq', bands: [] }] }, 'processing.0.bands is required'],
      ['a field of another plugin', { ...base, processing: [{ plugin: 'eq', target: -23, bands: [{ freq: 100, gain: 1 }] }] }, 'processing.0.target is not a known field'],
      ['host', { ...base, output: { type: 'rtp', host: 'not a host!', port: 5004 } }, /^output\.host must be an IPv4 or IPv6 address or a DNS name/],
      ['output port', { ...base, output: { type: 'rtp', host: '127.0.0.1', port: 0 } }, 'output.port must be >= 1'],
      ['interface', { ...base, output: { type: 'rtp', host: '127.0.0.1', port: 5004, interface: 'eth0; rm' } }, 'output.interface has characters that are not allowed'],
    ];
    for (const [what, request, message] of cases) {
      const result = await failure(client.create(request));
      t.equal(result.code, status.INVALID_ARGUMENT, `${what}: code`);
      if (typeof message === 'string') t.equal(result.details, message, what);
      else t.match(result.details, message, what);
    }
    t.same((await client.list()).pipelines, [], 'nothing half-made');
  });

  void t.test('a request over 64 KiB is refused', async (t) => {
    const big = { ...createRequest(await freeUdpPort()), name: 'x'.repeat(70 * 1024) };
    t.equal((await failure(client.create(big))).code, status.RESOURCE_EXHAUSTED);
  });

  void t.test('ALREADY_EXISTS when the input port is taken', async (t) => {
    const port = await freeUdpPort();
    const first = await client.create(createRequest(port));
    const again = await failure(client.create(createRequest(port)));
    t.same(again, { code: status.ALREADY_EXISTS, details: `input.port ${port} is already in use by pipeline ${first.id}` });
    const heldPort = await freeUdpPort();
    const holder = createSocket('udp4');
    await new Promise<void>((resolve) => holder.bind(heldPort, '0.0.0.0', resolve));
    t.teardown(() => holder.close());
    t.same(await failure(client.create(createRequest(heldPort))), {
      code: status.ALREADY_EXISTS,
      details: `input.port ${heldPort} is already in use by another process`,
    });
    await client.delete(first.id);
  });

  void t.test('RESOURCE_EXHAUSTED past max_pipelines', async (t) => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await client.create(createRequest(await freeUdpPort()))).id);
    const over = await failure(client.create(createRequest(await freeUdpPort())));
    t.equal(over.code, status.RESOURCE_EXHAUSTED);
    t.match(over.details, /at most 3 pipelines/);
    for (const id of ids) await client.delete(id);
  });

  void t.test('a pipeline made over one edge is seen over the other', async (t) => {
    const viaGrpc = await client.create(createRequest(await freeUdpPort()));
    const rest = await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${viaGrpc.id}`);
    t.equal(rest.status, 200);
    t.match(rest.body, { id: viaGrpc.id, name: viaGrpc.name, status: 'active', created_at: viaGrpc.created_at });
    // JSON drops the absent optional fields (passphrase, pbkeylen) that ts-proto decodes as undefined
    t.same(rest.body.input, JSON.parse(JSON.stringify(viaGrpc.input)));

    const restPort = await freeUdpPort();
    const viaRest = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', {
      name: 'From REST',
      input: { type: 'srt', port: restPort },
      processing: [{ plugin: 'eq', bands: [{ freq: 1000, gain: 3, q: 2 }] }],
      output: { type: 'rtp', host: '127.0.0.1', port: 5006 },
    });
    t.equal(viaRest.status, 201);
    const listed = (await client.list()).pipelines;
    t.same(listed.map((p) => p.id), [viaGrpc.id, viaRest.body.id]);
    t.match(listed[1], {
      name: 'From REST',
      created_at: viaRest.body.created_at,
      input: { type: 'srt', port: restPort, latency: 120 },
      processing: [{ plugin: 'eq', bands: [{ freq: 1000, gain: 3, q: 2 }] }],
    });

    await client.delete(viaRest.body.id);
    t.equal((await api(engine, 'GET', `/api/v1/pipelines/${viaRest.body.id}`)).status, 404, 'deleted over gRPC, gone over REST');
    t.equal((await api(engine, 'DELETE', `/api/v1/pipelines/${viaGrpc.id}`)).status, 204);
    t.same((await client.list()).pipelines, [], 'deleted over REST, gone over gRPC');
  });

  void t.test('StreamMetrics: one event per 200 ms, per-pipeline figures, ends on cancel', async (t) => {
    const made = await client.create(createRequest(await freeUdpPort()));
    await eventually(async () => ((await client.list()).pipelines[0]?.state === 'running' ? true : undefined), 10_000, 'running');
    const call = client.stream();
    const recorded = record(call);
    await eventually(() => (recorded.events.length >= 1 ? true : undefined), 2000, 'the first event');
    await eventually(() => (recorded.events.length >= 11 ? true : undefined), 15_000, 'eleven events');
    // The period is read from the engine's own stamp on each event (`time`), as a median: a
    // loaded machine delays single ticks of the engine's timer and this process's reading of the
    // stream (a count per 2 s of this process's clock moves with both), not the period. A median
    // of 10 gaps within 150..250 ms also rules out a doubled timer (100) or a missed tick (400).
    const stamps = recorded.events.slice(0, 11).map((e) => Date.parse(e.event.time));
    const gaps = stamps.slice(1).map((at, i) => at - (stamps[i] ?? 0)).sort((a, b) => a - b);
    const median = ((gaps[4] ?? 0) + (gaps[5] ?? 0)) / 2;
    t.comment(`gaps between the first 11 events, engine time: ${gaps.join(', ')} ms`);
    t.ok(median >= 150 && median <= 250, `one event per 200 ms: median gap ${median} ms`);

    const last = recorded.events.at(-1)?.event;
    t.ok(last !== undefined);
    if (last !== undefined) {
      t.equal(last.active_pipelines, 1);
      t.equal(last.interval_ms, 200);
      t.ok(last.cpu_percent >= 0 && last.cpu_percent < 400, `engine cpu ${last.cpu_percent} %`);
      t.ok(last.memory_rss_bytes > 10 * 1024 * 1024, `engine rss ${last.memory_rss_bytes}`);
      t.match(last.time, /^\d{4}-\d\d-\d\dT/);
      const entry = last.pipelines[0];
      t.match(entry, { id: made.id, state: 'running', restarts: 0 });
      t.ok((entry?.child_rss_bytes ?? 0) > 1024 * 1024, `child rss ${entry?.child_rss_bytes}`);
      t.type(entry?.child_cpu_seconds, 'number');
      t.type(entry?.child_cpu_percent, 'number');
    }

    call.cancel();
    t.equal((await recorded.ended).code, status.CANCELLED);
    const count = recorded.events.length;
    await sleep(600);
    t.equal(recorded.events.length, count, 'no event after cancel');
    // The engine is still serving streams after a cancel.
    const again = record(client.stream());
    await eventually(() => (again.events.length >= 1 ? true : undefined), 2000, 'an event on a new stream');
    await client.delete(made.id);
  });

  void t.test('server reflection lists the service and serves its descriptor', async (t) => {
    const reflection = new Client(`127.0.0.1:${port}`, credentials.createInsecure());
    t.teardown(() => reflection.close());
    const ask = (field: number, value: string): Promise<Uint8Array> =>
      new Promise((resolve, reject) => {
        const call = reflection.makeBidiStreamRequest(
          '/grpc.reflection.v1.ServerReflection/ServerReflectionInfo',
          (request: Uint8Array) => Buffer.from(request),
          (response: Buffer) => new Uint8Array(response),
        );
        call.on('data', (response: Uint8Array) => {
          resolve(response);
          call.end();
        });
        call.on('error', reject);
        call.write(new BinaryWriter().uint32((field << 3) | WireType.LengthDelimited).string(value).finish());
      });
    /** Length-delimited fields of a message, by field number. */
    const fields = (bytes: Uint8Array): Map<number, Uint8Array[]> => {
      const out = new Map<number, Uint8Array[]>();
      const reader = new BinaryReader(bytes);
      while (reader.pos < reader.len) {
        const [no, type] = reader.tag();
        if (type === WireType.LengthDelimited) out.set(no, [...(out.get(no) ?? []), reader.bytes()]);
        else reader.skip(type);
      }
      return out;
    };
    const text = (bytes: Uint8Array | undefined): string => Buffer.from(bytes ?? []).toString('utf8');

    // ServerReflectionRequest.list_services = 7 -> ServerReflectionResponse.list_services_response = 6
    const listed = fields(await ask(7, '*')).get(6)?.[0];
    const services = (fields(listed ?? new Uint8Array()).get(1) ?? []).map((s) => text(fields(s).get(1)?.[0]));
    t.ok(services.includes('svc.v1.EngineService'), `services: ${services.join(', ')}`);

    // file_containing_symbol = 4 -> file_descriptor_response = 4 { repeated bytes file_descriptor_proto = 1 }
    const files = fields(fields(await ask(4, 'svc.v1.EngineService')).get(4)?.[0] ?? new Uint8Array()).get(1) ?? [];
    const file = fromBinary(FileDescriptorProtoSchema, files[0] ?? new Uint8Array());
    t.equal(file.package, 'svc.v1');
    t.same(file.service[0]?.method.map((m) => m.name), ['GetHealth', 'CreatePipeline', 'ListPipelines', 'DeletePipeline', 'StreamMetrics', 'GetPipelineSdp', 'UpdatePipeline', 'ResetLoudness', 'SelectInput']);
    const pipeline = file.messageType.find((m) => m.name === 'Pipeline');
    t.same(pipeline?.field.slice(0, 4).map((f) => [f.name, f.number]), [['id', 1], ['name', 2], ['status', 3], ['created_at', 4]]);
    const latency = file.messageType.find((m) => m.name === 'InputConfig')?.field.find((f) => f.name === 'latency');
    t.ok(latency?.proto3Optional, 'proto3 optional is kept');
    t.ok(latency?.oneofIndex !== undefined && latency.oneofIndex >= 0, 'with its synthetic oneof');
    t.ok(create(FileDescriptorProtoSchema, file).sourceCodeInfo !== undefined, 'comments are served');
  });

  void t.test('shutdown ends open streams with OK, then the engine exits 0', async (t) => {
    const streams = [record(client.stream()), record(client.stream())];
    await eventually(() => (streams.every((s) => s.events.length > 0) ? true : undefined), 2000, 'events');
    engine.process.kill('SIGTERM');
    for (const s of streams) t.same(await s.ended, { code: status.OK, details: 'OK' });
    t.same(await engine.exited, [0, null]);
  });
});

void t.test('gRPC with auth', async (t) => {
  const digest = createHash('sha256').update('key-two').digest('hex');
  const engine = await startEngine(t, { extraToml: `metrics_interval_ms = 200\n[auth]\nenabled = true\napi_keys = ["key-one", "sha256:${digest}"]` });
  const client = new TestClient(grpcPortOf(engine));
  t.teardown(() => client.close());

  t.equal((await client.health()).status, 'healthy', 'GetHealth stays open');
  const none = await failure(client.list());
  t.same(none, { code: status.UNAUTHENTICATED, details: 'the authorization: Bearer <key> metadata entry is required' });
  t.same(await failure(client.list('nope')), { code: status.UNAUTHENTICATED, details: 'the bearer key is not valid' });
  t.equal((await failure(client.create(createRequest(await freeUdpPort())))).code, status.UNAUTHENTICATED);
  t.equal((await failure(client.delete('pl_doesnotexist00'))).code, status.UNAUTHENTICATED, 'no key: not even NOT_FOUND');
  const denied = record(client.stream());
  t.equal((await denied.ended).code, status.UNAUTHENTICATED, 'StreamMetrics');
  t.equal(denied.events.length, 0);

  t.same(await client.list('key-one'), { pipelines: [] });
  t.same(await client.list('key-two'), { pipelines: [] }, 'a key given as its digest');
  const made = await client.create(createRequest(await freeUdpPort()), 'key-one');
  t.equal((await api(engine, 'GET', `/api/v1/pipelines/${made.id}`, undefined, { authorization: 'Bearer key-two' })).status, 200);
  await client.delete(made.id, 'key-two');
  const allowed = record(client.stream('key-one'));
  await eventually(() => (allowed.events.length > 0 ? true : undefined), 2000, 'an event with a key');
});
