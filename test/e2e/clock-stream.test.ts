/**
 * A stream that never stops: the caller leaves and another comes back; the child keeps running
 * (same pid), the RTP stream goes on without a sequence gap, silence in between, the tone again
 * after, faded in. Real ffmpeg callers, the kernel's receive timestamps (test/helpers/rtp-timing.py).
 */
import t from 'tap';
import { api, createPipeline, isRunning, startEngine, waitForPipeline } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { between, clockFigures, realtimeNs } from '../helpers/clock-analysis.js';
import { RtpTiming } from '../helpers/rtp-timing.js';
import { sendSine } from '../helpers/srt-sender.js';
import type { PipelineView } from '../../src/pipelines/registry.js';

const AMPLITUDE = 0.5;
const S = 1_000_000_000n;

void t.test('a caller leaves and another comes back: one child, no sequence gap, silence between, the tone after', async (t) => {
  const engine = await startEngine(t);
  const receiver = await RtpTiming.open(60);
  t.teardown(() => receiver.close());
  const srtPort = await freeUdpPort();
  const { id } = await createPipeline(engine, { name: 'leave and return', srtPort, outPort: receiver.port });
  const running = await waitForPipeline(engine, id, isRunning, 'running');
  const get = async (): Promise<PipelineView> => (await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${id}`)).body;

  const first = sendSine({ port: srtPort, amplitude: AMPLITUDE, seconds: 5 });
  t.teardown(() => first.stop());
  t.equal(await first.done, 0, 'the first caller sent its audio and left');
  const firstLeft = realtimeNs();
  // Bounds for a loaded machine, not figures (srtsrc sees the caller's close at once).
  const waiting = await waitForPipeline(engine, id, (p) => p.input_state === 'waiting', 'input_state waiting after the caller left', 15_000);
  t.equal(waiting.pid, running.pid, 'the child kept running');
  await new Promise((resolve) => setTimeout(resolve, 3000));
  const between1 = await get();
  t.equal(between1.input_state, 'waiting', 'no caller: waiting');
  t.equal(between1.state, 'running');

  const secondStarted = realtimeNs();
  const second = sendSine({ port: srtPort, amplitude: AMPLITUDE, seconds: 5 });
  t.teardown(() => second.stop());
  await waitForPipeline(engine, id, (p) => p.input_state === 'receiving', 'receiving again', 15_000);
  t.equal(await second.done, 0, 'the second caller sent its audio');
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const end = await get();
  t.equal(end.pid, running.pid, 'the same child all along');
  t.equal(end.restarts, 0, 'no restart');
  await receiver.close();

  const all = between(receiver.packets, 0n, realtimeNs());
  const figures = clockFigures(all);
  t.equal(figures.sequenceGaps, 0, `no sequence gap in ${figures.packets} packets`);
  t.equal(figures.timestampSteps, 0, 'RTP timestamps step by 48 throughout');
  t.equal(receiver.kernelDrops, 0, 'the receiver lost nothing to its own buffer');
  // silence while nobody sends (after the first caller's last audio has drained through SRT latency)
  const gap = between(receiver.packets, firstLeft + S, secondStarted);
  t.ok(gap.length >= 1500, `${gap.length} packets while no caller was connected`);
  t.equal(gap.filter((p) => p.peak > 1e-4).length, 0, 'all of them digital silence');
  // the tone again, while the second caller sends. The time from spawning the caller is mostly
  // ffmpeg's own start-up and SRT's connection (seconds on a loaded machine): printed, not a bar.
  // The engine's part is judged on the audio: the tone whole for 2 s from its first packet on.
  const afterwards = receiver.packets.filter((p) => p.recvNs >= secondStarted);
  const toneIndex = afterwards.findIndex((p) => p.peak > 0.05);
  t.ok(toneIndex >= 0, 'the tone came back');
  const toneAt = afterwards[toneIndex]?.recvNs ?? 0n;
  const resumeMs = Number(toneAt - secondStarted) / 1e6;
  t.comment(`audio resumed ${resumeMs.toFixed(0)} ms after the second caller was spawned`);
  const fade = afterwards.slice(toneIndex, toneIndex + 12).map((p) => p.peak);
  // The bridge fades in what it starts with: the first packet that is not digital silence. When
  // it starts inside the decoder's priming frame (near silence), the tone after it is the
  // sender's own onset (a sine from phase 0), not a cut.
  const startIndex = afterwards.findIndex((p) => p.peak > 1e-4);
  const resumed = afterwards[startIndex]?.peak ?? 1;
  t.ok(resumed < AMPLITUDE * 0.6, `faded in: the first packet after the silence peaks at ${resumed.toFixed(3)} (${toneIndex - startIndex} ms before the tone's first)`);
  // (AAC rings a little at an onset: the peak may overshoot the sine's amplitude)
  t.ok((fade[10] ?? 0) > AMPLITUDE * 0.9, `full level 10 ms later: peak ${(fade[10] ?? 0).toFixed(3)}`);
  const steady = between(receiver.packets, toneAt + S, toneAt + 3n * S);
  const dropouts = steady.filter((p) => p.peak < AMPLITUDE * 0.9).length;
  t.equal(dropouts, 0, `the tone is whole for 2 s after it resumed (${steady.length} packets)`);
});
