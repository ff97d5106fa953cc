/**
 * The IS-05 v1.1 Connection API end to end: the shipped engine, a real SRT sender (ffmpeg) into a
 * pipeline, its RTP received on 127.0.0.1.
 * - every Connection API answer (lists, constraints, staged, active, transporttype, PATCH and
 *   bulk answers, errors) validates against the official IS-05 v1.1 schemas (ajv-draft-04);
 * - an immediate activation of a new destination_port: RTP arrives on the new port and stops on
 *   the old one, the same child (live), the REST view and the IS-04 sender show the new port;
 * - a scheduled relative and a scheduled absolute activation take effect (bounded loosely: the
 *   machine is loaded and shared); a PATCH while one is pending is 423;
 * - master_enable false: no RTP (a restart with the output's valve closed); true: RTP again;
 * - invalid staged values: 400 with the error body, nothing staged or changed;
 * - bulk/senders: one answer per sender (200, 404), a GET is 405.
 */
import { readFileSync } from 'node:fs';
import t from 'tap';
import { api, createPipeline, eventually, startEngine, waitForPipeline, isRunning } from '../helpers/engine-process.js';
import { nmosSchemas } from '../helpers/nmos-schemas.js';
import { freeTcpPort, freeUdpPort } from '../helpers/ports.js';
import { RtpReceiver } from '../helpers/rtp-receiver.js';
import { sendSine } from '../helpers/srt-sender.js';
import type { PipelineView } from '../../src/pipelines/registry.js';

const CONNECTION = '/x-nmos/connection/v1.1';
const NODE = '/x-nmos/node/v1.3';
/** TAI - UTC, s (as src/nmos/ids.ts). */
const TAI_OFFSET_S = 37;

interface Leg {
  source_ip: string;
  destination_ip: string;
  source_port: number | string;
  destination_port: number | string;
  rtp_enabled: boolean;
}
interface SenderParams {
  receiver_id: string | null;
  master_enable: boolean;
  activation: { mode: string | null; requested_time: string | null; activation_time: string | null };
  transport_params: Leg[];
}

async function call(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // the SDP, or an empty body
  }
  return { status: response.status, body: parsed };
}

function cmdline(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
}

/** Packets keep arriving: more after `ms` than before. */
async function flowing(receiver: RtpReceiver, ms: number): Promise<boolean> {
  const before = receiver.received;
  await new Promise((resolve) => setTimeout(resolve, ms));
  return receiver.received > before;
}

/** Waits until a receiver gets no packet for `quietMs` (bounded by `timeoutMs`). */
async function quiet(receiver: RtpReceiver, quietMs: number, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (!(await flowing(receiver, quietMs))) return true;
  }
  return false;
}

void t.test('IS-05 Connection API: schemas, immediate and scheduled activations, master_enable, 400s, bulk', async (t) => {
  const schemas = nmosSchemas('is-05');
  const nmosPort = await freeTcpPort();
  // No registry (port 9 refuses): no DNS-SD or mDNS outside a network namespace.
  const engine = await startEngine(t, { waitForReady: false, extraToml: ['[nmos]', 'enabled = true', `http_port = ${nmosPort}`, 'registries = ["http://127.0.0.1:9"]'].join('\n') });
  await engine.waitForLog((line) => line.event === 'restored', 90_000); // a loaded machine starts slowly
  const base = `http://127.0.0.1:${nmosPort}`;
  const first = await RtpReceiver.open(0, { receiveBufferBytes: 1 << 20 });
  const second = await RtpReceiver.open(0, { receiveBufferBytes: 1 << 20 });
  t.teardown(() => first.close());
  t.teardown(() => second.close());
  const srtPort = await freeUdpPort();
  const pipeline = await createPipeline(engine, { name: 'IS-05 one', srtPort, outPort: first.port });
  const sender = sendSine({ port: srtPort, amplitude: 0.3, frequency: 1000, seconds: 120 });
  t.teardown(() => sender.stop());
  // A second pipeline with an ST 2022-7 leg: two legs in every IS-05 answer.
  const dual = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', {
    name: 'IS-05 two legs', input: { type: 'srt', port: await freeUdpPort(), latency: 300 },
    output: { type: 'rtp', host: '127.0.0.1', port: 9, redundant: { host: '127.0.0.2', port: 9 } },
  });
  t.equal(dual.status, 201, 'the two-leg pipeline is created');

  const running = await waitForPipeline(engine, pipeline.id, (p) => isRunning(p) && p.input_state === 'receiving', 'running with its SRT input', 30_000);
  t.ok(running.pid !== null, 'a child');
  /** How the engine applied the change that made `version` (its `updated` log line, which may come after the answer): live, restart. */
  const appliedAt = async (version: number): Promise<unknown> => (await engine.waitForLog((l) => l.event === 'updated' && l.pipeline_id === pipeline.id && l.version === version, 10_000)).applied;
  const currentVersion = async (): Promise<number> => (await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${pipeline.id}`)).body.version;
  t.ok(await first.waitForPackets(200, 15_000), 'RTP arrives on the first port');

  const senders = (await call(base, 'GET', `${NODE}/senders`)).body as { id: string; version: string; tags: Record<string, string[]>; subscription: { active: boolean; receiver_id: string | null } }[];
  const senderOf = (id: string): string => senders.find((s) => s.tags['urn:x-audio-engine:id']?.[0] === id)!.id;
  const one = senderOf(pipeline.id);
  const two = senderOf(dual.body.id);
  const single = `${CONNECTION}/single/senders/${one}`;
  const is04Sender = async (): Promise<{ version: string; description: string; subscription: { active: boolean; receiver_id: string | null } }> =>
    (await call(base, 'GET', `${NODE}/senders/${one}`)).body as { version: string; description: string; subscription: { active: boolean; receiver_id: string | null } };

  await t.test('every answer validates against IS-05 v1.1', async (t) => {
    const checks: [string, string][] = [
      [`${CONNECTION}/`, 'connectionapi-base.json'],
      [`${CONNECTION}/single/`, 'connectionapi-single.json'],
      [`${CONNECTION}/bulk/`, 'connectionapi-bulk.json'],
      [`${CONNECTION}/single/senders/`, 'sender-receiver-base.json'],
      [`${CONNECTION}/single/receivers/`, 'sender-receiver-base.json'],
      [`${single}/`, 'connectionapi-sender.json'],
      [`${single}/constraints`, 'constraints-schema.json'],
      [`${single}/staged`, 'sender-response-schema.json'],
      [`${single}/active`, 'sender-response-schema.json'],
      [`${single}/transporttype`, 'transporttype-response-schema.json'],
      [`${CONNECTION}/single/senders/${two}/constraints`, 'constraints-schema.json'],
      [`${CONNECTION}/single/senders/${two}/active`, 'sender-response-schema.json'],
    ];
    for (const [path, schema] of checks) {
      const res = await call(base, 'GET', path);
      t.equal(res.status, 200, `${path}: 200`);
      t.same(schemas.errors(schema, res.body), [], `${path} validates against ${schema}`);
    }
    t.same((await call(base, 'GET', `${CONNECTION}/single/senders/`)).body, senders.map((s) => `${s.id}/`), 'one entry per IS-04 sender');
    const active = (await call(base, 'GET', `${single}/active`)).body as SenderParams;
    t.equal(active.transport_params.length, 1, 'one leg');
    t.match(active.transport_params[0], { destination_ip: '127.0.0.1', destination_port: first.port, rtp_enabled: true }, 'active is the output');
    t.equal(active.master_enable, true);
    const legs = (await call(base, 'GET', `${CONNECTION}/single/senders/${two}/active`)).body as SenderParams;
    t.same(legs.transport_params.map((l) => [l.destination_ip, l.destination_port]), [['127.0.0.1', 9], ['127.0.0.2', 9]], 'a redundant output: two legs');
    t.equal(((await call(base, 'GET', `${CONNECTION}/single/senders/${two}/constraints`)).body as unknown[]).length, 2, 'constraints per leg');
    const sdp = await fetch(`${base}${single}/transportfile`);
    t.equal(sdp.headers.get('content-type'), 'application/sdp');
    t.match(await sdp.text(), `m=audio ${first.port} RTP/AVP 96`);
    const missing = await call(base, 'GET', `${CONNECTION}/single/senders/00000000-0000-4000-8000-000000000000/staged`);
    t.equal(missing.status, 404);
    t.same(schemas.errors('error.json', missing.body), [], '404 body');
    for (const [method, path] of [['GET', `${CONNECTION}/bulk/senders`], ['PATCH', `${single}/active`], ['POST', `${single}/staged`]] as const) {
      const res = await call(base, method, path, method === 'GET' ? undefined : {});
      t.equal(res.status, 405, `${method} ${path}: 405`);
      t.same(schemas.errors('error.json', res.body), [], '405 body');
    }
    const device = (await call(base, 'GET', `${NODE}/devices`)).body as { controls: { type: string; href: string }[] }[];
    t.same(device[0]?.controls.map((c) => c.type), ['urn:x-nmos:control:sr-ctrl/v1.1'], 'the device names its Connection API');
  });

  await t.test('invalid staged values: 400, nothing staged or changed', async (t) => {
    const stagedBefore = (await call(base, 'GET', `${single}/staged`)).body;
    const viewBefore = (await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${pipeline.id}`)).body;
    const bad: [unknown, RegExp][] = [
      [{ transport_params: [{ destination_port: 70000 }], activation: { mode: 'activate_immediate' } }, /destination_port/],
      [{ transport_params: [{ destination_port: '5004' }] }, /destination_port/],
      [{ transport_params: [{ destination_ip: '127.0.0.1 ! fakesink' }] }, /destination_ip/],
      [{ transport_params: [{ destination_ip: '300.1.1.1' }] }, /destination_ip/],
      [{ transport_params: [{ source_ip: '10.99.99.99' }] }, /source_ip/],
      [{ transport_params: [{ source_port: 1234 }] }, /source_port/],
      [{ transport_params: [{ fec_enabled: true }] }, /fec_enabled/],
      [{ transport_params: [{ destination_port: 6000 }, {}] }, /one per leg/],
      [{ transport_params: { destination_port: 6000 } }, /array/],
      [{ master_enable: 'no' }, /master_enable/],
      [{ receiver_id: 'x' }, /receiver_id/],
      [{ activation: { mode: 'activate_later' } }, /activation.mode/],
      [{ activation: { mode: 'activate_scheduled_relative' } }, /requested_time/],
      [{ activation: { mode: 'activate_scheduled_absolute', requested_time: '12.5' } }, /requested_time/],
      [{ destination_port: 6000 }, /destination_port is not a staged parameter/],
      [[1, 2], /JSON object/],
    ];
    for (const [body, error] of bad) {
      const res = await call(base, 'PATCH', `${single}/staged`, body);
      t.equal(res.status, 400, `${JSON.stringify(body)}: 400`);
      t.same(schemas.errors('error.json', res.body), [], 'the error body validates');
      t.match((res.body as { error: string }).error, error, `names the field: ${(res.body as { error: string }).error}`);
    }
    t.same((await call(base, 'GET', `${single}/staged`)).body, stagedBefore, 'staged unchanged');
    const viewAfter = (await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${pipeline.id}`)).body;
    t.equal(viewAfter.version, viewBefore.version, 'the pipeline unchanged (same version)');
    t.same(viewAfter.output, viewBefore.output);
  });

  await t.test('immediate activation of a new destination_port: live, durable, versioned', async (t) => {
    const versionBefore = (await is04Sender()).version;
    const patchedAt = Date.now();
    const res = await call(base, 'PATCH', `${single}/staged`, { transport_params: [{ destination_port: second.port }], activation: { mode: 'activate_immediate' } });
    t.equal(res.status, 200, JSON.stringify(res.body));
    t.same(schemas.errors('sender-response-schema.json', res.body), [], 'the PATCH answer validates');
    const answered = res.body as SenderParams;
    t.equal(answered.activation.mode, 'activate_immediate');
    t.match(answered.activation.activation_time, /^[0-9]+:[0-9]+$/, 'activation_time set');
    t.equal(await appliedAt(await currentVersion()), 'live', 'applied live: the same child, its input stays');
    t.ok(await second.waitForPackets(second.received + 100, 20_000), 'RTP arrives on the new port');
    t.ok(await quiet(first, 500, 5000), 'and stops on the old one');
    t.notOk(await flowing(first, 1000), 'none on the old port afterwards');
    // figures, not bounds (the bar: within 1 s): from sending the PATCH, wall clock
    t.comment(`immediate: first packet on the new port ${(second.firstArrivalSince(patchedAt) ?? Number.NaN) - patchedAt} ms after the PATCH was sent; last on the old port ${(first.lastArrival ?? Number.NaN) - patchedAt} ms after it`);
    const view = (await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${pipeline.id}`)).body;
    t.equal(view.output.port, second.port, 'the REST view shows the new port');
    const active = (await call(base, 'GET', `${single}/active`)).body as SenderParams;
    t.equal(active.transport_params[0]?.destination_port, second.port, 'active shows it');
    t.equal(active.activation.mode, 'activate_immediate', 'and the activation');
    const staged = (await call(base, 'GET', `${single}/staged`)).body as SenderParams;
    t.same(staged.activation, { mode: null, requested_time: null, activation_time: null }, 'staged activation back to null');
    const after = await is04Sender();
    t.not(after.version, versionBefore, 'the IS-04 sender has a new version');
    t.match(after.description, `:${second.port}`);
  });

  await t.test('scheduled activations: relative, then absolute; locked meanwhile', async (t) => {
    const res = await call(base, 'PATCH', `${single}/staged`, { transport_params: [{ destination_port: first.port }], activation: { mode: 'activate_scheduled_relative', requested_time: '6:0' } });
    t.equal(res.status, 202, JSON.stringify(res.body));
    t.same(schemas.errors('sender-response-schema.json', res.body), [], 'the 202 answer validates');
    const scheduled = (res.body as SenderParams).activation;
    t.equal(scheduled.mode, 'activate_scheduled_relative');
    t.equal(scheduled.requested_time, '6:0');
    t.match(scheduled.activation_time, /^[0-9]+:[0-9]+$/);
    // 6 s ahead: the two requests below come well before it even on a loaded machine.
    const locked = await call(base, 'PATCH', `${single}/staged`, { master_enable: false });
    t.equal(locked.status, 423, 'a PATCH while an activation is pending: 423');
    t.same(schemas.errors('error.json', locked.body), []);
    t.equal(((await call(base, 'GET', `${single}/staged`)).body as SenderParams).activation.mode, 'activate_scheduled_relative', 'staged shows the pending activation');
    const done = await eventually(async () => {
      const active = (await call(base, 'GET', `${single}/active`)).body as SenderParams;
      return active.transport_params[0]?.destination_port === first.port ? active : undefined;
    }, 30_000, 'the relative activation took effect');
    t.equal(done.activation.mode, 'activate_scheduled_relative');
    t.equal(done.activation.activation_time, scheduled.activation_time, 'active names the scheduled time');
    t.ok(await first.waitForPackets(first.received + 100, 20_000), 'RTP on the first port again');

    // Absolute: 2 s ahead in TAI.
    const at = Date.now() + 2000;
    const requested = `${Math.floor(at / 1000) + TAI_OFFSET_S}:${(at % 1000) * 1_000_000}`;
    const abs = await call(base, 'PATCH', `${single}/staged`, { transport_params: [{ destination_port: second.port }], activation: { mode: 'activate_scheduled_absolute', requested_time: requested } });
    t.equal(abs.status, 202, JSON.stringify(abs.body));
    t.equal((abs.body as SenderParams).activation.activation_time, requested, 'activation_time is the requested time');
    await eventually(async () => {
      const active = (await call(base, 'GET', `${single}/active`)).body as SenderParams;
      return active.transport_params[0]?.destination_port === second.port && active.activation.mode === 'activate_scheduled_absolute' ? true : undefined;
    }, 20_000, 'the absolute activation took effect');
    t.ok(await second.waitForPackets(second.received + 100, 20_000), 'RTP on the second port');
    // a figure, not a bound (the bar: within 100 ms of its time): wall clock against the requested TAI time
    t.comment(`absolute, 2 s ahead: first packet on the new port ${(second.firstArrivalSince(at - 1000) ?? Number.NaN) - at} ms after the requested time`);

    // A pending one cancelled by mode null: nothing happens.
    const pending = await call(base, 'PATCH', `${single}/staged`, { transport_params: [{ destination_port: first.port }], activation: { mode: 'activate_scheduled_relative', requested_time: '2:0' } });
    t.equal(pending.status, 202);
    const cancel = await call(base, 'PATCH', `${single}/staged`, { activation: { mode: null } });
    t.equal(cancel.status, 200);
    t.same((cancel.body as SenderParams).activation, { mode: null, requested_time: null, activation_time: null }, 'cancelled');
    await new Promise((resolve) => setTimeout(resolve, 3000));
    t.equal(((await call(base, 'GET', `${single}/active`)).body as SenderParams).transport_params[0]?.destination_port, second.port, 'a cancelled activation changes nothing');
    // IS-05: mode null cancels the activation, not the staging; the next activation (master_enable
    // below) would send to the first port. Stage the active destination again.
    t.equal(((await call(base, 'GET', `${single}/staged`)).body as SenderParams).transport_params[0]?.destination_port, first.port, 'the cancelled PATCH\'s values stay staged');
    const restaged = await call(base, 'PATCH', `${single}/staged`, { transport_params: [{ destination_port: second.port }] });
    t.equal(restaged.status, 200, JSON.stringify(restaged.body));
  });

  await t.test('master_enable false stops sending, the child runs; true resumes', async (t) => {
    const off = await call(base, 'PATCH', `${single}/staged`, { master_enable: false, activation: { mode: 'activate_immediate' } });
    t.equal(off.status, 200, JSON.stringify(off.body));
    t.ok(await quiet(second, 500, 5000), 'no RTP');
    t.notOk(await flowing(second, 1500), 'none at all');
    t.notOk(await flowing(first, 1500), 'none on the other port either');
    const view = (await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${pipeline.id}`)).body;
    t.equal(await appliedAt(view.version), 'restart', 'applied with a restart of the child (docs/nmos.md)');
    const closed = await waitForPipeline(engine, pipeline.id, (p) => isRunning(p) && p.pid !== running.pid, 'the child runs again', 30_000);
    t.match(cmdline(closed.pid ?? -1).join(' '), /! valve name=gate drop=true drop-mode=forward-sticky-events ! udpsink name=out /, 'the new child has a closed valve before its sink');
    t.equal(view.output.enabled, false, 'the REST view shows the output off');
    t.same(view.output_legs.map((leg) => leg.state), ['off'], 'its leg is off');
    const active = (await call(base, 'GET', `${single}/active`)).body as SenderParams;
    t.equal(active.master_enable, false);
    t.equal((await is04Sender()).subscription.active, false, 'IS-04 subscription.active follows');

    const on = await call(base, 'PATCH', `${single}/staged`, { master_enable: true, activation: { mode: 'activate_immediate' } });
    t.equal(on.status, 200);
    t.equal(await appliedAt(await currentVersion()), 'restart');
    const again = await second.waitForPackets(second.received + 200, 20_000);
    if (!again) {
      const logs = await api<unknown>(engine, 'GET', `/api/v1/pipelines/${pipeline.id}/logs?lines=40`);
      t.comment(`received ${second.received}; first ${first.received}; ${JSON.stringify(await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${pipeline.id}`)).slice(0, 1500)}; ${logs.text.slice(-3000)}`);
    }
    t.ok(again, 'RTP again');
    t.equal(((await call(base, 'GET', `${single}/active`)).body as SenderParams).transport_params[0]?.destination_port, second.port, 'to the same destination');
    t.equal((await is04Sender()).subscription.active, true);
    const reopened = (await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${pipeline.id}`)).body;
    t.equal(reopened.output.enabled, undefined, 'on: the flag is gone from the output');
    t.notOk(cmdline(reopened.pid ?? -1).includes('valve'), 'the child that sends has no valve');
  });

  await t.test('bulk/senders: one answer per sender', async (t) => {
    const unknown = '00000000-0000-4000-8000-000000000000';
    const res = await call(base, 'POST', `${CONNECTION}/bulk/senders`, [
      { id: one, params: { transport_params: [{ destination_port: first.port }], activation: { mode: 'activate_immediate' } } },
      { id: two, params: { transport_params: [{ destination_port: 70000 }, {}] } },
      { id: unknown, params: {} },
    ]);
    t.equal(res.status, 200, JSON.stringify(res.body));
    t.same(schemas.errors('bulk-response-schema.json', res.body), [], 'validates against bulk-response-schema');
    t.same((res.body as { id: string; code: number }[]).map((r) => [r.id, r.code]), [[one, 200], [two, 400], [unknown, 404]]);
    t.ok(await first.waitForPackets(first.received + 100, 20_000), 'the first sender moved back to the first port');
    const bad = await call(base, 'POST', `${CONNECTION}/bulk/senders`, [{ id: 'nope', params: {} }]);
    t.equal(bad.status, 400);
    t.same(schemas.errors('error.json', bad.body), []);
  });
});
