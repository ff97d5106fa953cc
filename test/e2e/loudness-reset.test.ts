/**
 * Resetting a running pipeline's loudness measurement (POST /api/v1/pipelines/{id}/loudness/reset)
 * with real audio: a real ffmpeg SRT caller plays a loud programme (a 1 kHz sine at 0.5 peak) for
 * 12 s, then the same tone 20 dB quieter. Integrated loudness gates the quiet part away (it is
 * more than 10 LU below the loud part): without a reset it keeps reading the loud programme. After
 * the reset it measures the quiet programme alone, and the measured time starts from 0.
 */
import t from 'tap';
import { api, createPipeline, eventually, isRunning, startEngine, waitForPipeline, type EngineProcess } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { RtpReceiver } from '../helpers/rtp-receiver.js';
import { sendSine } from '../helpers/srt-sender.js';
import { grpcPortOf, TestClient } from '../grpc/client.js';

const LOUD_S = 12;
/** 0.5 peak for LOUD_S seconds, then 0.05 (-20 dB); sgn() keeps commas out of ffmpeg's filter graph. */
const PROGRAMME = `(0.275+0.225*sgn(${LOUD_S}-t))*sin(2*PI*1000*t)`;

/** One sample of a per-pipeline metric (labels given as `name="value"` parts). */
async function metric(engine: EngineProcess, name: string, ...labels: string[]): Promise<number | undefined> {
  const res = await api<string>(engine, 'GET', '/api/v1/metrics');
  const line = res.text.split('\n').find((l) => l.startsWith(`${name}{`) && labels.every((label) => l.includes(label)));
  const value = line === undefined ? NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
  return Number.isFinite(value) ? value : undefined;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

void t.test('a reset measures the programme from the reset on; the audio goes on untouched', async (t) => {
  const engine = await startEngine(t);
  const rtp = await RtpReceiver.open(0, { receiveBufferBytes: 4 << 20 });
  t.teardown(() => rtp.close());
  const srtPort = await freeUdpPort();
  const pipeline = await createPipeline(engine, { name: 'reset', srtPort, outPort: rtp.port, processing: [{ plugin: 'loudness-normalize', target: -23 }] });
  const running = await waitForPipeline(engine, pipeline.id, isRunning, 'the child to run');
  const sender = sendSine({ port: srtPort, amplitude: 0, expression: PROGRAMME, seconds: 45 });
  t.teardown(() => sender.stop());
  const id = `pipeline_id="${pipeline.id}"`;
  const input = 'stage="input"';

  // A stereo 1 kHz sine of peak A reads 20 log10(A / sqrt 2) + 3.01 - 0.691 LUFS (BS.1770; the
  // K-weighting is ~0 dB at 1 kHz): -6.7 LUFS loud, -26.7 LUFS quiet.
  const loud = 20 * Math.log10(0.5 / Math.SQRT2) + 3.01 - 0.691;
  const quietLevel = loud - 20;
  const shortTerm = (): Promise<number | undefined> => metric(engine, 'audio_engine_pipeline_loudness_short_term_lufs', id, input);
  await eventually(async () => {
    const s = await shortTerm();
    return s !== undefined && s > loud - 2 ? s : undefined;
  }, 20_000, 'the loud programme on the input meter');
  // Then the quiet part has (nearly) filled the 3 s short-term window.
  const quiet = await eventually(async () => {
    const s = await shortTerm();
    return s !== undefined && s > -70 && s < quietLevel + 1.5 ? s : undefined;
  }, 25_000, 'the quiet programme on the input meter');
  await sleep(1000);
  const integratedBefore = await metric(engine, 'audio_engine_pipeline_loudness_integrated_lufs', id, input);
  const measuredBefore = await metric(engine, 'audio_engine_pipeline_loudness_measured_seconds', id);
  t.ok(integratedBefore !== undefined && Math.abs(integratedBefore - loud) <= 1,
    `before the reset the integrated loudness is the loud programme's: ${String(integratedBefore)} LUFS (loud ${loud.toFixed(1)}, quiet ${quietLevel.toFixed(1)}; short-term ${quiet.toFixed(1)})`);
  t.ok(measuredBefore !== undefined && measuredBefore >= LOUD_S, `it covers the whole programme so far (${String(measuredBefore)} s)`);

  const packetsBefore = rtp.stats(0, 0).packets;
  const reset = await api<{ id: string; reset: string[]; reset_at: string }>(engine, 'POST', `/api/v1/pipelines/${pipeline.id}/loudness/reset`);
  t.equal(reset.status, 200, reset.text);
  t.same(reset.body.reset, ['step0'], 'the loudness step was reset');
  t.equal(reset.body.id, pipeline.id);
  t.ok(!Number.isNaN(Date.parse(reset.body.reset_at)), `reset_at ${reset.body.reset_at}`);

  await sleep(3000);
  const integratedAfter = await metric(engine, 'audio_engine_pipeline_loudness_integrated_lufs', id, input);
  const shortAfter = await metric(engine, 'audio_engine_pipeline_loudness_short_term_lufs', id, input);
  const measuredAfter = await metric(engine, 'audio_engine_pipeline_loudness_measured_seconds', id);
  t.ok(integratedAfter !== undefined && shortAfter !== undefined && Math.abs(integratedAfter - shortAfter) <= 0.5 && Math.abs(integratedAfter - quietLevel) <= 1,
    `after the reset the integrated loudness is the quiet programme's: ${String(integratedAfter)} LUFS (short-term ${String(shortAfter)}, expected ${quietLevel.toFixed(1)})`);
  t.ok(measuredAfter !== undefined && measuredAfter > 0.5 && measuredAfter < 6, `the measurement restarted: it covers ${String(measuredAfter)} s`);
  const view = await api<{ pid: number; restarts: number }>(engine, 'GET', `/api/v1/pipelines/${pipeline.id}`);
  t.equal(view.body.pid, running.pid, 'the same child');
  t.equal(view.body.restarts, 0, 'no restart');
  const stats = rtp.stats(0, 0);
  t.ok(stats.packets > packetsBefore + 2000, `the output went on (${stats.packets - packetsBefore} packets since the reset)`);
  t.equal(stats.sequenceGaps, 0, 'no gap in the RTP sequence');
  const logged = engine.logs.find((l) => l.event === 'loudness-reset' && l.pipeline_id === pipeline.id);
  t.ok(logged, 'the reset is in the engine log');

  // The control room's way: gRPC ResetLoudness, the same reset.
  const client = new TestClient(grpcPortOf(engine));
  t.teardown(() => client.raw.close());
  const byGrpc = await client.resetLoudness({ id: pipeline.id });
  t.same(byGrpc.steps, ['step0'], 'gRPC ResetLoudness reset step0');
  await sleep(1500);
  const measuredGrpc = await metric(engine, 'audio_engine_pipeline_loudness_measured_seconds', id);
  t.ok(measuredGrpc !== undefined && measuredGrpc < 3, `the measurement restarted again (${String(measuredGrpc)} s)`);
  sender.stop();
});

void t.test('a pipeline with nothing to reset, or none at all, gets a clear error', async (t) => {
  const engine = await startEngine(t);
  const rtp = await RtpReceiver.open();
  t.teardown(() => rtp.close());
  const srtPort = await freeUdpPort();
  const eqOnly = await createPipeline(engine, { name: 'eq only', srtPort, outPort: rtp.port, processing: [{ plugin: 'eq', bands: [{ freq: 1000, gain: 3 }] }] });
  const noStep = await api<{ code: string; message: string }>(engine, 'POST', `/api/v1/pipelines/${eqOnly.id}/loudness/reset`);
  t.equal(noStep.status, 409);
  t.equal(noStep.body.code, 'NOT_MEASURING');
  t.match(noStep.body.message, /no loudness-normalize step/);
  const unknown = await api<{ code: string }>(engine, 'POST', '/api/v1/pipelines/pl_nosuchpipeline0/loudness/reset');
  t.equal(unknown.status, 404);
  t.equal(unknown.body.code, 'PIPELINE_NOT_FOUND');
  const client = new TestClient(grpcPortOf(engine));
  t.teardown(() => client.raw.close());
  const refused = await client.resetLoudness({ id: eqOnly.id }).then(() => undefined, (error: { code: number; details: string }) => error);
  t.equal(refused?.code, 9, 'gRPC: FAILED_PRECONDITION');
  t.match(refused?.details, /no loudness-normalize step/);
});
