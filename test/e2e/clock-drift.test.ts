/**
 * A sender whose clock is off: ffmpeg callers reading 0.1 % fast and slow (-readrate 1.001 and
 * 0.999, AAC in MPEG-TS) into two pipelines of one engine for 60 s. The output is on the host's
 * clock whatever the sender does: 1000 packets per second of host time, RTP timestamps 48 apart,
 * and the timestamps are the host clock's time (clock.source = "realtime"; the kernel's receive
 * timestamps are CLOCK_REALTIME, so the offset band is the send schedule plus loopback delivery).
 */
import t from 'tap';
import { api, createPipeline, isRunning, startEngine, waitForPipeline } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { between, clockFigures, realtimeNs } from '../helpers/clock-analysis.js';
import { RtpTiming } from '../helpers/rtp-timing.js';
import { sendSine } from '../helpers/srt-sender.js';
import type { PipelineView } from '../../src/pipelines/registry.js';

const SEND_SECONDS = 62;
const SETTLE_SECONDS = 10; // the window starts after the bridge settled
const PACKETS_PER_SEND = 4; // the default

void t.test('callers 1000 ppm fast and slow: 1000 packets per second of host time, media-clock timestamps', async (t) => {
  const engine = await startEngine(t, { extraToml: '[clock]\nsource = "realtime"' });
  const cases = await Promise.all([1.001, 0.999].map(async (readrate) => {
    const receiver = await RtpTiming.open(SEND_SECONDS + 30);
    t.teardown(() => receiver.close());
    const srtPort = await freeUdpPort();
    const { id } = await createPipeline(engine, { name: `readrate ${readrate}`, srtPort, outPort: receiver.port });
    await waitForPipeline(engine, id, isRunning, 'running');
    return { readrate, receiver, srtPort, id };
  }));
  const started = realtimeNs();
  const senders = cases.map(({ srtPort, readrate }) => sendSine({ port: srtPort, amplitude: 0.5, seconds: SEND_SECONDS, readrate }));
  for (const sender of senders) t.teardown(() => sender.stop());
  const windowFrom = started + BigInt(SETTLE_SECONDS * 1e9);
  await new Promise((resolve) => setTimeout(resolve, SETTLE_SECONDS * 1000));
  const before = await Promise.all(cases.map(async ({ id }) => (await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${id}`)).body));
  await new Promise((resolve) => setTimeout(resolve, (SEND_SECONDS - SETTLE_SECONDS - 4) * 1000));
  const windowTo = realtimeNs();
  const after = await Promise.all(cases.map(async ({ id }) => (await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${id}`)).body));
  for (const sender of senders) t.equal(await sender.done, 0, 'the caller sent all its audio');

  for (const [i, { readrate, receiver }] of cases.entries()) {
    await receiver.close();
    t.equal(receiver.kernelDrops, 0, 'the receiver lost nothing to its own buffer');
    const window = between(receiver.packets, windowFrom, windowTo);
    const f = clockFigures(window);
    const seconds = Number(windowTo - windowFrom) / 1e9;
    const ppm = (f.packetsPerSecond / 1000 - 1) * 1e6;
    // The rate is judged on the packets that left on time: late packets (the sending thread
    // descheduled on a loaded machine, the figures below) move a least-squares line through
    // every packet, not the rate the output runs at (helpers/clock-analysis.ts).
    const onTimePpm = (f.onTimePacketsPerSecond / 1000 - 1) * 1e6;
    t.ok(f.packets > seconds * 1000 * 0.99, `readrate ${readrate}: ${f.packets} packets in ${seconds.toFixed(1)} s`);
    t.ok(Math.abs(onTimePpm) <= 20, `readrate ${readrate}: ${f.onTimePacketsPerSecond.toFixed(4)} packets per second of host time (${onTimePpm.toFixed(1)} ppm; at most 20), measured on the packets that left on time (all packets, least squares: ${f.packetsPerSecond.toFixed(4)}, ${ppm.toFixed(1)} ppm)`);
    t.equal(f.sequenceGaps, 0, `readrate ${readrate}: no sequence gap`);
    t.equal(f.timestampSteps, 0, `readrate ${readrate}: RTP timestamps step by 48`);
    // The offset band, the late packets and the underruns follow the machine's load (the sending
    // thread descheduled on a shared 2-core VM): figures, printed here and judged in the bench
    // (npm run bench -- --only lateness, docs/clock.md), not assertions of this test.
    const bound = 2 + PACKETS_PER_SEND;
    const bandMs = (f.offsetMax - f.offsetMin) / 48;
    const p98Ms = (f.offsetP99 - f.offsetP1) / 48;
    t.comment(`figure, readrate ${readrate}: (rtp_ts - t_recv x 48000/1e9) within ${bandMs.toFixed(2)} ms (offset ${(f.offsetMin / 48).toFixed(2)} .. ${(f.offsetMax / 48).toFixed(2)} ms; goal at most ${bound}), 1st..99th percentile ${p98Ms.toFixed(2)} ms`);
    t.comment(`figure, readrate ${readrate}: ${f.lateOver1ms} of ${f.packets} packets left more than 1 ms after their timestamp (goal none)`);
    const clock = after[i]?.clock;
    t.ok(clock !== null && clock !== undefined, 'the pipeline reports its clock');
    // The drift, once the bridge states it (null: not known yet, its line too scattered on a
    // loaded machine; the engine says nothing rather than a wrong figure): the sender's offset
    // within the stated uncertainty or 200 ppm. The replays of gst-plugins/tests/clock judge the
    // uncertainty's coverage on recorded arrivals.
    const expected = (readrate - 1) * 1e6;
    const drift = clock?.drift_ppm;
    const uncertainty = clock?.drift_uncertainty_ppm;
    const allowed = Math.max(200, typeof uncertainty === 'number' ? uncertainty : 0);
    t.ok(drift === null || (typeof drift === 'number' && Math.abs(drift - expected) <= allowed),
      `readrate ${readrate}: the bridge measures ${String(drift)} ± ${String(uncertainty)} ppm (sender ${expected.toFixed(0)} ppm; allowed ${allowed.toFixed(0)}, or not known yet)`);
    t.equal(after[i]?.input_state, 'receiving');
    t.comment(`figure, readrate ${readrate}: underruns ${before[i]?.clock?.underruns} -> ${clock?.underruns} in the window (goal none), overruns ${before[i]?.clock?.overruns} -> ${clock?.overruns}, fill ${clock?.jitter_buffer_seconds} s, latency ${clock?.latency_seconds} s`);
    t.equal(clock?.overruns, before[i]?.clock?.overruns, `readrate ${readrate}: no overrun in the window`);
  }
});
