/**
 * Overload with the real engine, real gst-launch-1.0 children, real SRT senders and real RTP
 * receivers (docs/capacity.md): overload from another program is reported, not punished, and the
 * high-priority pipelines keep their CPU first. The load is bounded busy loops (helpers/busy-loop.ts).
 */
import { cpus } from 'node:os';
import t, { type Test } from 'tap';
import type { OverloadReport } from '../../src/capacity/host-capacity.js';
import type { PipelineView } from '../../src/pipelines/registry.js';
import { busyLoops, stopLoops } from '../helpers/busy-loop.js';
import { api, eventually, startEngine, waitForPipeline } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { RtpReceiver } from '../helpers/rtp-receiver.js';
import { sendSine, type Sender } from '../helpers/srt-sender.js';

const LOUD_EQ = [
  { plugin: 'loudness-normalize', target: -23 },
  { plugin: 'eq', bands: [{ freq: 100, gain: -2 }, { freq: 1000, gain: 1 }, { freq: 8000, gain: 1.5 }] },
];

const body = (srtPort: number, outPort = 9, priority?: 'high' | 'normal'): Record<string, unknown> => ({
  name: `overload ${srtPort}`,
  input: { type: 'srt', port: srtPort, latency: 300 },
  processing: LOUD_EQ,
  output: { type: 'rtp', host: '127.0.0.1', port: outPort },
  ...(priority === undefined ? {} : { priority }),
});

function sender(t: Test, port: number, seconds: number): Sender {
  const s = sendSine({ port, amplitude: 0.5, seconds });
  t.teardown(() => s.stop());
  return s;
}

void t.test('overload from another program is reported on /health and in metrics; no child is restarted', async (t) => {
  const engine = await startEngine(t, { extraToml: 'metrics_interval_ms = 500\ncpu_cores = 0' });
  const receiver = await RtpReceiver.open();
  t.teardown(() => receiver.close());
  const port = await freeUdpPort();
  // On a shared machine busy with other work the engine rightly refuses: try again as Retry-After says, 3 times.
  let made = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', body(port, receiver.port));
  for (let i = 0; i < 3 && made.status === 503; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 1000 * Number(made.headers.get('retry-after') ?? 10)));
    made = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', body(port, receiver.port));
  }
  if (made.status === 503) {
    void t.skip(`the shared machine was too busy to admit the test pipeline: ${made.text}`, () => undefined);
    return;
  }
  t.equal(made.status, 201);
  await waitForPipeline(engine, made.body.id, (p) => p.state === 'running', 'running', 30_000);
  sender(t, port, 40);
  await waitForPipeline(engine, made.body.id, (p) => p.input_state === 'receiving', 'receiving', 30_000);
  // One busy loop per CPU, each eating a core at nice 19: the host has no idle time left, yet
  // the loops take CPU only from idle and barely touch the other work on this shared machine.
  const loops = busyLoops(t, cpus().length, 19, 25);
  const report = await eventually(async () => {
    const res = await api<{ status: string; overloaded?: OverloadReport }>(engine, 'GET', '/health');
    return res.body.overloaded;
  }, 15_000, '/health to report overload');
  t.match(report.message, /^the host cannot carry its admitted pipelines within the reserve: headroom -[\d.]+ cores; capacity/);
  t.ok(report.headroom_ratio < 0, `headroom ratio ${report.headroom_ratio}`);
  t.ok(report.other_programs_cores > 1, `other programs ${report.other_programs_cores} cores`);
  t.equal(report.capacity_cores, cpus().length);
  t.equal((await api<{ status: string }>(engine, 'GET', '/health')).body.status, 'healthy', 'status stays healthy');
  const metrics = (await api(engine, 'GET', '/api/v1/metrics')).text;
  t.match(metrics, /^audio_engine_host_overloaded 1$/m);
  t.match(metrics, /^audio_engine_host_cpu_headroom_ratio -\d/m);
  t.match(metrics, new RegExp(`^audio_engine_pipeline_realtime_ratio\\{pipeline_id="${made.body.id}"\\} [\\d.]+$`, 'm'));
  await new Promise((resolve) => setTimeout(resolve, 8000));
  stopLoops(loops);
  const after = (await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${made.body.id}`)).body;
  t.equal(after.restarts, 0, 'no restart');
  t.equal(after.state, 'running');
  t.notOk(engine.logs.some((l) => l.event === 'stalled'), 'the watchdog killed nothing');
  t.ok(engine.logs.some((l) => l.event === 'overloaded'), 'the overload is in the log');
});

void t.test('under overload the high-priority pipelines stay real time first (received RTP)', async (t) => {
  // Normal children at niceness 19 (weight 15 against 1024): one busy loop per core at niceness
  // 0 starves them and leaves the high ones (the engine's niceness) their share. A fixed capacity:
  // the test is about priorities, not admission.
  const engine = await startEngine(t, { extraToml: 'cpu_cores = 64\nnormal_priority_nice = 19' });
  const made: { id: string; priority: 'high' | 'normal'; receiver: RtpReceiver }[] = [];
  for (const priority of ['high', 'normal', 'high', 'normal'] as const) {
    const receiver = await RtpReceiver.open(0, { receiveBufferBytes: 1 << 20 });
    t.teardown(() => receiver.close());
    const port = await freeUdpPort();
    const res = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', body(port, receiver.port, priority));
    t.equal(res.status, 201);
    t.equal(res.body.priority, priority);
    made.push({ id: res.body.id, priority, receiver });
    // The caller starts once the child listens (on a loaded machine a child can take seconds).
    await waitForPipeline(engine, res.body.id, (v) => v.state === 'running', 'running', 30_000);
    sender(t, port, 60);
  }
  for (const p of made) await waitForPipeline(engine, p.id, (v) => v.input_state === 'receiving', 'receiving', 45_000);
  const loops = busyLoops(t, cpus().length, 0, 20);
  await new Promise((resolve) => setTimeout(resolve, 4000));
  for (const p of made) p.receiver.reset();
  const started = Date.now();
  await new Promise((resolve) => setTimeout(resolve, 12_000));
  const seconds = (Date.now() - started) / 1000;
  const rates = made.map((p) => ({ ...p, rate: p.receiver.received / seconds }));
  const views = (await api<{ pipelines: PipelineView[] }>(engine, 'GET', '/api/v1/pipelines')).body.pipelines;
  stopLoops(loops);
  const high = rates.filter((r) => r.priority === 'high').map((r) => r.rate);
  const normal = rates.filter((r) => r.priority === 'normal').map((r) => r.rate);
  t.comment(`RTP packets/s over ${seconds.toFixed(1)} s with ${loops.length} busy loops: high ${high.map((r) => r.toFixed(0)).join(', ')}; normal ${normal.map((r) => r.toFixed(0)).join(', ')}`);
  t.comment(`real-time ratios seen by the engine: ${views.map((v) => `${v.priority} ${String(v.realtime_ratio)}${v.behind ? ' (behind)' : ''}`).join('; ')}`);
  if (Math.min(...normal) > 980) {
    t.comment('the normal pipelines were not starved either: the load was not enough to show the order this time');
    return;
  }
  t.ok(Math.min(...high) > Math.max(...normal), 'every high pipeline delivered more than every normal one');
  t.ok(views.some((v) => v.priority === 'normal' && v.behind), 'the pipeline data shows the normal ones behind');
  // Whether the high ones stay fully real time also depends on what else this shared machine
  // runs (its other work competes with them at the same niceness): reported, not asserted.
  const allHighRealTime = high.every((rate) => rate > 980);
  t.comment(allHighRealTime ? 'every high pipeline stayed real time' : 'the machine\'s other load took the high pipelines off real time too (less than the normal ones)');
});
