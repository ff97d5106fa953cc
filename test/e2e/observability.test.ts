/**
 * What the engine tells about a running pipeline: audio levels and loudness read back from
 * /api/v1/metrics, SRT counters moving, promtool-clean exposition, silence reported, a stalled
 * child restarted, logs by pipeline. Real engine, real gst-launch child, real ffmpeg SRT caller.
 */
import { spawnSync } from 'node:child_process';
import t from 'tap';
import type { PipelineView } from '../../src/pipelines/registry.js';
import { api, createPipeline, eventually, isRunning, startEngine, waitForPipeline, type EngineProcess } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { RtpReceiver, sineRmsDbfs } from '../helpers/rtp-receiver.js';
import { sendSine } from '../helpers/srt-sender.js';

/** Value of one series of a Prometheus text scrape, or undefined. */
function sample(scrape: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of scrape.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const body = line.slice(name.length + 1, line.lastIndexOf('}'));
    const found = new Map<string, string>([...body.matchAll(/(\w+)="([^"]*)"/g)].map((m): [string, string] => [m[1] ?? '', m[2] ?? '']));
    if (Object.entries(labels).every(([k, v]) => found.get(k) === v)) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

async function create(engine: EngineProcess, srtPort: number, processing: unknown[], outPort: number): Promise<PipelineView> {
  const made = await createPipeline(engine, { name: 'observed', srtPort, processing, outPort });
  return waitForPipeline(engine, made.id, isRunning, 'running');
}

void t.test('levels, loudness and SRT counters of a running pipeline, in Prometheus format', async (t) => {
  const engine = await startEngine(t, { extraToml: 'metrics_interval_ms = 250' });
  const receiver = await RtpReceiver.open();
  t.teardown(() => receiver.close());
  const port = await freeUdpPort();
  const made = await create(engine, port, [{ plugin: 'loudness-normalize', target: -23 }], receiver.port);
  const id = made.id;

  const amplitude = 0.1;
  const sender = sendSine({ port, amplitude, seconds: 9 });
  t.teardown(() => sender.stop());
  // A full short-term window (3 s) of the tone, counted from when the engine sees the caller's
  // audio (ffmpeg's start-up and the SRT connection take seconds on a loaded machine), plus the
  // SRT latency (300 ms) and a statistics interval.
  await waitForPipeline(engine, id, (p) => p.input_state === 'receiving', 'the caller\'s audio', 15_000);
  await new Promise((resolve) => setTimeout(resolve, 3700));
  const first = (await api(engine, 'GET', '/api/v1/metrics')).text;
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const scrape = (await api(engine, 'GET', '/api/v1/metrics')).text;

  const sent = sineRmsDbfs(amplitude);
  for (const channel of ['0', '1']) {
    const rms = sample(scrape, 'audio_engine_pipeline_input_rms_dbfs', { pipeline_id: id, channel });
    t.ok(rms !== undefined && Math.abs(rms - sent) < 0.5, `input RMS ch${channel} ${rms?.toFixed(2)} dBFS, sent ${sent.toFixed(2)}`);
    const peak = sample(scrape, 'audio_engine_pipeline_input_peak_dbfs', { pipeline_id: id, channel });
    t.ok(peak !== undefined && Math.abs(peak - 20 * Math.log10(amplitude)) < 0.5, `input peak ch${channel} ${peak?.toFixed(2)} dBFS`);
  }
  // A 1 kHz sine in both channels: K-weighting adds ~+0.69 dB at 1 kHz, cancelling BS.1770's -0.691,
  // and two channels add 3.01 dB: loudness = per-channel RMS + 3.01.
  const expectedLufs = sent + 3.01;
  const momentary = sample(scrape, 'audio_engine_pipeline_loudness_momentary_lufs', { pipeline_id: id, step: 'step0', stage: 'input' });
  t.ok(momentary !== undefined && Math.abs(momentary - expectedLufs) < 0.5, `input momentary ${momentary?.toFixed(2)} LUFS, expected ${expectedLufs.toFixed(2)}`);
  const shortTerm = sample(scrape, 'audio_engine_pipeline_loudness_short_term_lufs', { pipeline_id: id, step: 'step0', stage: 'input' });
  t.ok(shortTerm !== undefined && Math.abs(shortTerm - expectedLufs) < 0.5, `input short-term ${shortTerm?.toFixed(2)} LUFS`);
  const gain = sample(scrape, 'audio_engine_pipeline_gain_db', { pipeline_id: id, step: 'step0' });
  t.ok(gain !== undefined && gain < -1, `the normaliser turns it down toward -23 (gain ${gain?.toFixed(2)} dB)`);
  t.equal(sample(scrape, 'audio_engine_pipeline_srt_connected', { pipeline_id: id }), 1, 'SRT caller connected');
  const before = sample(first, 'audio_engine_pipeline_srt_packets_received_total', { pipeline_id: id }) ?? 0;
  const after = sample(scrape, 'audio_engine_pipeline_srt_packets_received_total', { pipeline_id: id }) ?? 0;
  t.ok(before > 0 && after > before, `SRT packets received move: ${before} -> ${after}`);
  const outBefore = sample(first, 'audio_engine_pipeline_output_packets_total', { pipeline_id: id }) ?? 0;
  const outAfter = sample(scrape, 'audio_engine_pipeline_output_packets_total', { pipeline_id: id }) ?? 0;
  // Moving is the point; how far in a second depends on when each scrape's statistics arrived.
  t.ok(outAfter > outBefore, `RTP packets out move: ${outBefore} -> ${outAfter}`);
  t.ok((sample(scrape, 'audio_engine_pipeline_srt_packets_lost_total', { pipeline_id: id }) ?? -1) >= 0, 'loss counter exported');
  const fill = sample(scrape, 'audio_engine_pipeline_buffer_fill_ratio', { pipeline_id: id });
  t.ok(fill !== undefined && fill >= 0, `jitter buffer fill against its target ${fill}`);
  const jitter = sample(scrape, 'audio_engine_pipeline_jitter_buffer_seconds', { pipeline_id: id });
  t.ok(jitter !== undefined && jitter >= 0 && jitter < 0.5, `jitter buffer ${jitter} s`);
  t.ok(sample(scrape, 'audio_engine_pipeline_input_clock_drift_ppm', { pipeline_id: id }) !== undefined, 'drift exported');
  t.ok((sample(scrape, 'audio_engine_pipeline_jitter_buffer_underruns_total', { pipeline_id: id }) ?? -1) >= 0, 'underruns exported');
  t.ok((sample(scrape, 'audio_engine_pipeline_jitter_buffer_overruns_total', { pipeline_id: id }) ?? -1) >= 0, 'overruns exported');
  const latency = sample(scrape, 'audio_engine_pipeline_latency_seconds', { pipeline_id: id });
  t.ok(latency !== undefined && latency >= 0.3 && latency < 1, `latency estimate ${latency} s (SRT 300 ms + the bridge)`);
  t.equal(sample(scrape, 'audio_engine_pipeline_state', { pipeline_id: id, state: 'running' }), 1);

  const promtool = spawnSync('promtool', ['check', 'metrics'], { input: scrape, encoding: 'utf8' });
  t.equal(promtool.status, 0, `promtool check metrics: ${promtool.stdout}${promtool.stderr}`);

  const view = (await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${id}`)).body;
  t.equal(view.input_state, 'receiving');
  t.equal(view.srt_connected, true);
  t.ok(view.clock !== null && view.clock.jitter_target_seconds === 0.05, 'the pipeline shows its clock bridge (target engine.jitter_ms, 50 ms by default)');

  const logs = await api(engine, 'GET', `/api/v1/pipelines/${id}/logs?lines=3`);
  t.equal(logs.status, 200);
  t.match(logs.headers.get('content-type') ?? '', /^text\/plain/);
  t.equal(logs.text.trimEnd().split('\n').length, 3, 'logs?lines=3 gives 3 lines');
  t.equal((await api(engine, 'GET', `/api/v1/pipelines/${id}/logs?lines=0`)).status, 400);

  await sender.done;
  t.equal((await api(engine, 'DELETE', `/api/v1/pipelines/${id}`)).status, 204);
  const gone = (await api(engine, 'GET', '/api/v1/metrics')).text;
  t.notMatch(gone, id, 'no series of a deleted pipeline');
});

void t.test('sustained silence is reported, not restarted', async (t) => {
  const engine = await startEngine(t, { extraToml: 'metrics_interval_ms = 250' });
  const port = await freeUdpPort();
  const made = await create(engine, port, [], 9);
  const sender = sendSine({ port, amplitude: 0, seconds: 8 });
  t.teardown(() => sender.stop());
  const silent = await eventually(async () => {
    const view = (await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${made.id}`)).body;
    return view.input_state === 'silent' ? view : undefined;
  }, 12_000, 'silence reported');
  t.ok(silent.silence_seconds >= 5, `silent for ${silent.silence_seconds} s`);
  t.equal(silent.restarts, 0, 'not restarted');
  t.equal(silent.srt_connected, true);
  const scrape = (await api(engine, 'GET', '/api/v1/metrics')).text;
  t.ok((sample(scrape, 'audio_engine_pipeline_silence_seconds', { pipeline_id: made.id }) ?? 0) >= 5, 'silence in the metrics');
});

void t.test('a stalled child (SIGSTOP) is killed and restarted with the reason', async (t) => {
  const engine = await startEngine(t, { extraToml: 'metrics_interval_ms = 200' });
  const made = await create(engine, await freeUdpPort(), [], 9);
  const pid = (await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${made.id}`)).body.pid ?? -1;
  await new Promise((resolve) => setTimeout(resolve, 600)); // a few statistics first
  process.kill(pid, 'SIGSTOP');
  t.teardown(() => { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } });
  const back = await eventually(async () => {
    const view = (await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${made.id}`)).body;
    return view.restarts >= 1 && view.state === 'running' && view.pid !== pid ? view : undefined;
  }, 15_000, 'a restart after the stall');
  t.match(back.last_error, /^stalled: no statistics from the child for \d+\.\d s$/);
  t.ok(engine.logs.some((l) => l.event === 'stalled' && l.pipeline_id === made.id), 'logged with the pipeline id');
});
