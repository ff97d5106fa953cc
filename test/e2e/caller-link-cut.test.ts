/**
 * A live contribution link cut for 2 s and back (issue 51): the engine runs in one network
 * namespace the test creates, its ffmpeg SRT caller in another, joined by a veth pair; the
 * engine's veth end is taken down for 2 s and up again (this kernel has no sch_netem, so not
 * `tc netem loss 100%`), CUT_ROUNDS times (default 3). The same caller resumes on the same
 * connection (2 s is under SRT's 5 s peer idle timeout).
 *
 * Asserted: the same ffmpeg process and the same gst-launch-1.0 child throughout (no restart, no
 * new connection: one srt-caller-accepted), the caller's tone on the RTP output (received in the
 * engine's namespace, every payload kept) after every return of the link, and the stream whole
 * (no sequence gap, timestamps stepping by the samples sent). Printed, not asserted (a timing):
 * from the link's return (CLOCK_REALTIME, taken when `ip link set up` returned) to the tone on
 * the output's media clock, less the pipeline's fixed delay (SRT latency + jitter buffer).
 */
import path from 'node:path';
import t from 'tap';
import { eventually, gstLaunchChildren, isAlive, startEngine, TEST_SRT_LATENCY_MS } from '../helpers/engine-process.js';
import { BLOCK, RATE, mediaTimeNs, packetHolding } from '../helpers/failover-audio.js';
import { canUseNetns, createNetnsPair, nsApi, setLink } from '../helpers/netns.js';
import { readPayloadAudio, RtpTiming } from '../helpers/rtp-timing.js';
import { sendSine } from '../helpers/srt-sender.js';
import { toneBlocks } from '../helpers/tones.js';
import { clockFigures } from '../helpers/clock-analysis.js';

const ROUNDS = Math.max(1, Math.min(20, Number(process.env.CUT_ROUNDS ?? 3) || 3));
const CUT_MS = 2000;
const JITTER_MS = 150;
const INPUT_DELAY_NS = (TEST_SRT_LATENCY_MS + JITTER_MS) * 1e6;
const TONE = { frequency: 1000, amplitude: 10 ** (-14 / 20) };
const SRT_PORT = 9000;
t.setTimeout(180_000 + ROUNDS * 20_000);

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

void t.test('a 2 s cut of a live link: the same caller back on air, no restart', { skip: canUseNetns() ? false : 'needs root and iproute2 (ip netns)' }, async (t) => {
  const { a, b } = createNetnsPair(t, 'cut');
  const engine = await startEngine(t, { netns: a.ns, extraToml: `jitter_ms = ${JITTER_MS}\n[clock]\nsource = "realtime"` });
  const base = `http://127.0.0.1:${engine.restPort}`;
  const api = <T>(method: string, url: string, body?: unknown) => nsApi<T>(a.ns, method, `${base}${url}`, body);
  const payloads = path.join(engine.dir, 'cut.bin');
  const receiver = await RtpTiming.open(120 + ROUNDS * 20, payloads, a.ns);
  t.teardown(() => receiver.close());
  const created = api<{ id: string }>('POST', '/api/v1/pipelines', {
    name: 'link cut',
    input: { type: 'srt', port: SRT_PORT, latency: TEST_SRT_LATENCY_MS },
    processing: [],
    output: { type: 'rtp', host: '127.0.0.1', port: receiver.port },
  });
  t.equal(created.status, 201, 'the pipeline created');
  const id = created.body.id;
  const connected = (): boolean => api<{ srt_connected?: boolean }>('GET', `/api/v1/pipelines/${id}`).body.srt_connected === true;

  const caller = sendSine({ port: SRT_PORT, host: a.address, netns: b.ns, amplitude: TONE.amplitude, frequency: TONE.frequency, seconds: 300, latencyMs: TEST_SRT_LATENCY_MS, codec: 'aac' });
  t.teardown(() => caller.stop());
  await eventually(() => (connected() ? true : undefined), 60_000, 'the caller connected');
  const children = await gstLaunchChildren(engine.stateDir);
  t.equal(children.length, 1, `one child (${children.join(', ')})`);
  const callerPid = caller.process.pid ?? 0;

  const returns: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    await sleep(3000); // on air, steady
    setLink(a.ns, a.ifname, 'down');
    await sleep(CUT_MS);
    setLink(a.ns, a.ifname, 'up');
    returns.push(Date.now() * 1e6);
  }
  await sleep(4000);
  t.ok(isAlive(callerPid) && caller.process.exitCode === null, 'the same ffmpeg caller throughout');
  t.same(await gstLaunchChildren(engine.stateDir), children, 'the same child throughout: not restarted');
  t.equal(engine.logs.filter((l) => l.event === 'srt-caller-accepted').length, 1, 'one srt-caller-accepted: the caller resumed on its connection');
  t.ok(connected(), 'the view: connected');
  await receiver.close();

  const { samples, packetStart } = readPayloadAudio(payloads);
  const left = samples[0] ?? new Float32Array(0);
  const blocks = toneBlocks(left, [TONE.frequency], BLOCK, RATE);
  const onAir = blocks.map((x) => (x.amplitudes[0] ?? 0) > TONE.amplitude * 0.7);
  const figures = clockFigures(receiver.packets);
  t.equal(figures.sequenceGaps, 0, `no RTP sequence gap in ${receiver.packets.length} packets`);
  t.equal(figures.timestampSteps, 0, 'RTP timestamps step by the samples sent');
  const playsAt = (block: number): number => {
    const frame = block * BLOCK;
    const i = packetHolding(packetStart, frame);
    const p = receiver.packets[i];
    return p === undefined ? Number.NaN : mediaTimeNs(p, frame - (packetStart[i] ?? 0));
  };
  const times: string[] = [];
  for (const [k, up] of returns.entries()) {
    // the first block playing after the link's return whose tone holds for 200 ms
    let block = 0;
    while (block < blocks.length && playsAt(block) < up) block++;
    let run = 0;
    let on = -1;
    for (let i = block; i < blocks.length && on < 0; i++) {
      run = onAir[i] === true ? run + 1 : 0;
      if (run === 20) on = i - 19;
    }
    // the tone may never have stopped (SRT latency covered the cut): then it is on air at once
    const hole = on < 0 ? 0 : onAir.slice(Math.max(0, on - 400), on).filter((x) => !x).length;
    const delay = on < 0 ? Number.NaN : (playsAt(on) - up - INPUT_DELAY_NS) / 1e9;
    t.ok(on >= 0, `cut ${k + 1}: the caller's tone on the output after the link's return (${Number.isNaN(delay) ? 'never' : `${delay.toFixed(2)} s after it, less the fixed ${INPUT_DELAY_NS / 1e6} ms; ${hole * 10} ms without it before`})`);
    times.push(Number.isNaN(delay) ? 'never' : delay.toFixed(2));
  }
  t.comment(`link back -> the tone on the output, less ${INPUT_DELAY_NS / 1e6} ms, per cut: ${times.join(', ')} s (negative: sooner than the fixed delay, the caller's retransmissions of what it sent during the cut)`);
});
