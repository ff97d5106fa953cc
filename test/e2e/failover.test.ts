/**
 * Failover with real senders: ffmpeg sends main 1 kHz at -14 dBFS and backup 440 Hz
 * at -20 dBFS over SRT to 127.0.0.1; the engine's RTP output is received (kernel timestamps, every
 * payload kept: test/helpers/rtp-timing.py) and its audio read block by block
 * (test/helpers/failover-audio.ts). Durations are read in media time: the output's samples (no
 * sequence gap, timestamps stepping by the samples sent) and, where an input's return is not
 * audible in the output, the output's media clock (RTP timestamps on CLOCK_REALTIME) against the
 * kernel's time of the caller's datagrams at a relay in front of main (test/helpers/srt-relay.py),
 * plus the pipeline's SRT latency and jitter buffer (test/e2e/clock-latency.test.ts bounds that
 * delay).
 *
 * (a) the main sender killed: the backup's tone within loss_ms + 200 ms of main's last audio; no
 *     sequence gap, no timestamp step, no silent 10 ms block, no sample step beyond a 10 ms
 *     crossfade; the view, the `failover` log event and failovers_total{reason="loss"} agree.
 * (b) main back: on main return_s (+-1 s) later; a main whose link stalls and comes back every
 *     2 s (three times) does not go back on air until steady for return_s.
 * (c) main sends digital silence, its caller connected: the backup after silence_s (+-1 s).
 */
import path from 'node:path';
import t, { type Test } from 'tap';
import { api, engineAnswering, type EngineProcess, eventually, startEngine, TEST_SRT_LATENCY_MS } from '../helpers/engine-process.js';
import {
  BACKUP_TONE, BLOCK, countLabel, crossfadeStepBound, firstAtLeast, firstRun, lastAtLeast, MAIN_TONE, RATE,
  readFailoverAudio, scrapedValue, type FailoverAudio,
} from '../helpers/failover-audio.js';
import { freeUdpPort } from '../helpers/ports.js';
import { RtpTiming } from '../helpers/rtp-timing.js';
import { SrtRelay } from '../helpers/srt-relay.js';
import { sendSine, type Sender } from '../helpers/srt-sender.js';
import { largestStep } from '../helpers/tones.js';

/** The bridge's reserve: more than the default 50 ms, so that a stall of the loaded 2-core host
 * (both senders, the engine and the suite share it) does not empty both inputs at once: this file
 * tests the switching; test/e2e/load-silence.test.ts tests the bridge under load. */
const JITTER_MS = 150;

// three engines, four senders and about 100 s of audio: more than the suite's 180 s per file
// on a loaded host
t.setTimeout(360_000);
const LOSS_MS = 300;
const RETURN_S = 3;
const SILENCE_S = 3;
/** From a datagram leaving the caller to its audio on the output's media clock: SRT latency + jitter buffer. */
const INPUT_DELAY_NS = (TEST_SRT_LATENCY_MS + JITTER_MS) * 1e6;
const BLOCK_MS = (BLOCK / RATE) * 1000;

interface FailoverPipelineView {
  id: string;
  active_input: string | null;
  selection: string;
  srt_connected?: boolean;
  inputs?: { main?: { connected: boolean; silent_seconds: number | null }; backup?: { connected: boolean } };
}

interface Setup {
  engine: EngineProcess;
  receiver: RtpTiming;
  payloads: string;
  id: string;
  mainPort: number;
  backupPort: number;
  view(): Promise<FailoverPipelineView>;
}

/** An engine on the realtime media clock, a receiver keeping every payload, and a pipeline with main and backup. */
async function setUp(t: Test, name: string, seconds: number): Promise<Setup> {
  const engine = await startEngine(t, { extraToml: `jitter_ms = ${JITTER_MS}\n[clock]\nsource = "realtime"`, waitForReady: false });
  await engineAnswering(engine);
  const payloads = path.join(engine.dir, 'payloads.bin');
  const receiver = await RtpTiming.open(seconds, payloads);
  t.teardown(() => receiver.close());
  const [mainPort, backupPort] = [await freeUdpPort(), await freeUdpPort()];
  const created = await api<FailoverPipelineView>(engine, 'POST', '/api/v1/pipelines', {
    name,
    input: { type: 'srt', port: mainPort, latency: TEST_SRT_LATENCY_MS },
    backup: { type: 'srt', port: backupPort, latency: TEST_SRT_LATENCY_MS },
    failover: { loss_ms: LOSS_MS, return_s: RETURN_S, silence_s: SILENCE_S, silence_dbfs: -50 },
    processing: [],
    output: { type: 'rtp', host: '127.0.0.1', port: receiver.port },
  });
  if (created.status !== 201) throw new Error(`create failed: ${created.status} ${created.text}`);
  const id = created.body.id;
  const view = async (): Promise<FailoverPipelineView> => (await api<FailoverPipelineView>(engine, 'GET', `/api/v1/pipelines/${id}`)).body;
  return { engine, receiver, payloads, id, mainPort, backupPort, view };
}

function sender(t: Test, port: number, tone: typeof MAIN_TONE, options: { seconds?: number; expression?: string } = {}): Sender {
  // SMPTE 302M: PCM, so a step or a silence in the output is the engine's, not a lossy codec's
  const s = sendSine({ port, amplitude: tone.amplitude, frequency: tone.frequency, seconds: options.seconds ?? 120, latencyMs: TEST_SRT_LATENCY_MS, expression: options.expression, codec: 's302m' });
  t.teardown(() => s.stop());
  return s;
}

/** Main connects first and goes on air; then the backup connects (so no start-up switch). */
async function mainThenBackup(t: Test, setup: Setup, mainPort: number, mainOptions: { expression?: string } = {}): Promise<Sender> {
  const main = sender(t, mainPort, MAIN_TONE, mainOptions);
  await eventually(async () => {
    const v = await setup.view();
    return v.active_input === 'main' && v.inputs?.main?.connected === true ? true : undefined;
  }, 40_000, 'main on air');
  sender(t, setup.backupPort, BACKUP_TONE);
  await eventually(async () => ((await setup.view()).inputs?.backup?.connected === true ? true : undefined), 40_000, 'the backup connected');
  return main;
}

/** The failover log events of the engine so far. */
function failoverEvents(engine: EngineProcess): { from: string; to: string; reason: string; lost_ms?: number }[] {
  return engine.logs.filter((l) => l.event === 'failover').map((l) => ({ from: String(l.from), to: String(l.to), reason: String(l.reason), lost_ms: typeof l.lost_ms === 'number' ? l.lost_ms : undefined }));
}

/** The stream whole: no sequence gap, timestamps stepping by the samples sent, nothing lost by the receiver. */
function streamWhole(t: Test, audio: FailoverAudio, receiver: RtpTiming): void {
  t.equal(receiver.kernelDrops, 0, 'the receiver lost nothing to its own buffer');
  t.equal(audio.sequenceGaps, 0, `no RTP sequence gap in ${receiver.packets.length} packets`);
  t.equal(audio.timestampSteps, 0, 'RTP timestamps step by the samples sent throughout');
}

/** No silent 10 ms block in [from, to), and where the first is. */
function noSilentBlock(t: Test, audio: FailoverAudio, from: number, to: number, what: string): void {
  const silent = countLabel(audio.labels, 'silent', from, to);
  const first = audio.labels.indexOf('silent', from);
  t.equal(silent, 0, `no silent 10 ms block ${what} (${to - from} blocks)`, silent === 0 ? {} : { silent_blocks: silent, first_silent_block: first, seconds_from_start: ((first - from) * BLOCK_MS) / 1000, blocks_around: audio.labels.slice(Math.max(0, first - 5), first + 6).join(' ') });
}

/** No sample step in blocks [from, to) larger than a 10 ms crossfade between the two tones allows. */
function noClick(t: Test, audio: FailoverAudio, from: number, to: number, what: string): void {
  const bound = crossfadeStepBound(10);
  const { step, at } = largestStep(audio.left, from * BLOCK + 1, to * BLOCK);
  const block = Math.floor(at / BLOCK);
  const around = audio.labels.slice(Math.max(0, block - 5), block + 6).join(' ');
  t.ok(step <= bound, `largest sample step ${what}: ${step.toFixed(4)} (at ${(at / RATE).toFixed(3)} s of the stream) <= ${bound.toFixed(4)}, a 10 ms crossfade's`, step <= bound ? {} : { block, blocks_around: around, samples_around: Array.from(audio.left.slice(Math.max(0, at - 6), at + 6), (x) => Number(x.toFixed(4))).join(' ') });
}

/** The counter, the log and the view tell the same switches. */
async function agree(t: Test, setup: Setup, from: string, to: string, reason: string): Promise<void> {
  const events = failoverEvents(setup.engine);
  const logged = events.filter((e) => e.from === from && e.to === to && e.reason === reason).length;
  const scrape = (await api(setup.engine, 'GET', '/api/v1/metrics')).text;
  const counted = scrapedValue(scrape, 'audio_engine_pipeline_failovers_total', { pipeline_id: setup.id, from, to, reason });
  t.ok(logged >= 1, `a failover log event ${from} -> ${to} (${reason})`);
  t.equal(counted, logged, `failovers_total{from="${from}",to="${to}",reason="${reason}"} = ${counted}, the log's ${logged}`);
  const last = events.at(-1);
  t.comment(`failover events: ${events.map((e) => `${e.from}->${e.to} ${e.reason} (lost ${e.lost_ms} ms)`).join(', ')}`);
  const view = await setup.view();
  t.equal(view.active_input, last?.to, `the view's active_input (${view.active_input}) is the last event's "to"`);
  t.equal(scrapedValue(scrape, 'audio_engine_pipeline_active_input', { pipeline_id: setup.id, input: to }), view.active_input === to ? 1 : 0, 'active_input gauge agrees');
}

void t.test('(a) main sender killed: the backup within loss_ms + 200 ms, continuous, no click', async (t) => {
  const setup = await setUp(t, 'failover loss', 120);
  const main = await mainThenBackup(t, setup, setup.mainPort);
  await new Promise((resolve) => setTimeout(resolve, 3000)); // main steady on air with the backup ready
  main.stop();
  await eventually(async () => ((await setup.view()).active_input === 'backup' ? true : undefined), 20_000, 'the backup on air');
  await new Promise((resolve) => setTimeout(resolve, 3000));
  await agree(t, setup, 'main', 'backup', 'loss');
  const lost = failoverEvents(setup.engine).filter((e) => e.reason === 'loss').at(-1)?.lost_ms;
  t.comment(`the element switched when main had delivered no audio for ${lost} ms (loss_ms ${LOSS_MS})`);
  await setup.receiver.close();

  const audio = readFailoverAudio(setup.receiver.packets, setup.payloads);
  streamWhole(t, audio, setup.receiver);
  const start = firstRun(audio.labels, 'main', 100); // main steady on air (after its caller's fade-in)
  t.ok(start >= 0, 'main on air for at least 1 s');
  const mainLast = lastAtLeast(audio.main, MAIN_TONE.amplitude * 0.1); // main's tone, last heard (the kill)
  const backupOn = firstRun(audio.labels, 'backup', 50, Math.max(0, mainLast - 10));
  t.ok(mainLast > start && backupOn > 0, `main's last audio at block ${mainLast}, the backup alone from block ${backupOn}`);
  const switchMs = (backupOn - (mainLast + 1)) * BLOCK_MS;
  t.ok(switchMs <= LOSS_MS + 200, `the backup's tone ${switchMs.toFixed(0)} ms after main's last audio (bound loss_ms + 200 = ${LOSS_MS + 200} ms; <= 0: it covered while main faded)`);
  noSilentBlock(t, audio, start, audio.labels.length, 'from main steady to the end');
  noClick(t, audio, start, audio.labels.length, 'from main steady to the end');
  t.comment(`switch: main's last audio -> backup alone: ${switchMs.toFixed(0)} ms of media time; largest step around it ${largestStep(audio.left, (mainLast - 30) * BLOCK, (backupOn + 30) * BLOCK).step.toFixed(4)}`);
});

void t.test('(b) main back: on air return_s later; a main that comes and goes stays off air', async (t) => {
  const setup = await setUp(t, 'failover return', 150);
  const first = await mainThenBackup(t, setup, setup.mainPort);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  first.stop();
  await eventually(async () => ((await setup.view()).active_input === 'backup' ? true : undefined), 20_000, 'the backup on air after the first main caller left');

  // A new main caller, through a relay that times its datagrams: back on main return_s after
  // its audio reaches the output's timeline. It calls as an encoder restarted by its own
  // supervisor does, while the listener still holds the killed caller's connection: srtaccess
  // puts it in that connection's place (docs/failover.md, "A caller that calls again").
  const relay2 = await SrtRelay.open(setup.mainPort, 150);
  t.teardown(() => relay2.close());
  sender(t, relay2.port, MAIN_TONE);
  await eventually(async () => ((await setup.view()).active_input === 'main' ? true : undefined), 30_000, 'main on air again');
  const mainBack = relay2.frames[0]?.sentNs;
  await new Promise((resolve) => setTimeout(resolve, 2000));

  // Main's link stalls and comes back every 2 s, three times; then it stays.
  relay2.pause();
  await eventually(async () => ((await setup.view()).active_input === 'backup' ? true : undefined), 20_000, 'the backup on air after main\'s link stalled');
  const returnsBefore = failoverEvents(setup.engine).filter((e) => e.reason === 'return').length;
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setTimeout(resolve, 2000));
    relay2.resume();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    relay2.pause();
  }
  const flapEnded = failoverEvents(setup.engine).filter((e) => e.reason === 'return').length;
  t.equal(flapEnded - returnsBefore, 0, 'no return to main while main comes and goes (log)');
  t.equal((await setup.view()).active_input, 'backup', 'the backup still on air');
  await new Promise((resolve) => setTimeout(resolve, 2000));
  relay2.resume();
  await eventually(async () => ((await setup.view()).active_input === 'main' ? true : undefined), 30_000, 'main on air once steady');
  await new Promise((resolve) => setTimeout(resolve, 2000));
  await agree(t, setup, 'backup', 'main', 'return');
  await setup.receiver.close();
  await relay2.close();

  const audio = readFailoverAudio(setup.receiver.packets, setup.payloads);
  streamWhole(t, audio, setup.receiver);
  t.ok(mainBack !== undefined && relay2.resumedAt.length === 4, `the new caller's first audio timed at the relay, ${relay2.resumedAt.length} resumes`);
  // the output's stretches: main, backup (first caller gone), main (the new caller), backup (the stall), main (steady)
  const mainFirst = firstRun(audio.labels, 'main', 100);
  const backup1 = firstRun(audio.labels, 'backup', 50, mainFirst);
  const main2 = firstRun(audio.labels, 'main', 50, backup1);
  const backup2 = firstRun(audio.labels, 'backup', 50, main2);
  const main3 = firstRun(audio.labels, 'main', 50, backup2);
  t.ok(mainFirst >= 0 && backup1 > mainFirst && main2 > backup1 && backup2 > main2 && main3 > backup2, `the stretches main ${mainFirst}, backup ${backup1}, main ${main2}, backup ${backup2}, main ${main3} (blocks)`);
  const returnSeconds = (from: bigint | undefined, block: number): number => (from === undefined ? Number.NaN : (audio.playsAt(block) - Number(from) - INPUT_DELAY_NS) / 1e9);
  const afterCaller = returnSeconds(mainBack, main2);
  t.ok(Math.abs(afterCaller - RETURN_S) <= 1, `a new main caller: on main ${afterCaller.toFixed(2)} s after its audio arrived (return_s ${RETURN_S} +- 1 s)`);
  const lastResume = relay2.resumedAt.at(-1);
  const afterSteady = returnSeconds(lastResume, main3);
  t.ok(Math.abs(afterSteady - RETURN_S) <= 1, `main's link back for good: on main ${afterSteady.toFixed(2)} s later (return_s ${RETURN_S} +- 1 s)`);
  // no main in the output from the stall until return_s after the last resume
  // (main can be heard for moments while it comes and goes: the bridge covers a stall of the
  // backup from any input that has audio; on air means a switch, told by the log above and by
  // main alone only return_s after the last resume)
  t.comment(`blocks of main alone while it came and went: ${countLabel(audio.labels, 'main', backup2 + 1, main3)} of ${main3 - backup2}`);
  noSilentBlock(t, audio, mainFirst, audio.labels.length, 'across the test');
  noClick(t, audio, mainFirst, audio.labels.length, 'across the test');
});

void t.test('(c) main sends digital silence, its caller connected: the backup after silence_s', async (t) => {
  const setup = await setUp(t, 'failover silence', 120);
  // the tone for 20 s of the caller's own time, then a 10 ms fade to digital silence
  const toneSeconds = 20;
  const expression = `${MAIN_TONE.amplitude}*sin(2*PI*${MAIN_TONE.frequency}*t)*clip((${toneSeconds}-t)/0.01\\,0\\,1)`;
  await mainThenBackup(t, setup, setup.mainPort, { expression });
  await eventually(async () => {
    const v = await setup.view();
    return v.active_input === 'backup' ? v : undefined;
  }, 60_000, 'the backup on air after main went silent');
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const view = await setup.view();
  t.equal(view.inputs?.main?.connected, true, 'main still connected (it sends silence)');
  t.ok((view.inputs?.main?.silent_seconds ?? 0) >= SILENCE_S, `main silent for ${view.inputs?.main?.silent_seconds} s`);
  await agree(t, setup, 'main', 'backup', 'silence');
  await setup.receiver.close();

  const audio = readFailoverAudio(setup.receiver.packets, setup.payloads);
  streamWhole(t, audio, setup.receiver);
  const start = firstRun(audio.labels, 'main', 100);
  const mainLast = lastAtLeast(audio.main, MAIN_TONE.amplitude * 0.1);
  const backupOn = firstAtLeast(audio.backup, BACKUP_TONE.amplitude * 0.1, mainLast);
  t.ok(start >= 0 && mainLast > start && backupOn > mainLast, `main from block ${start} to ${mainLast}, then the backup from ${backupOn}`);
  const afterSilence = ((backupOn - (mainLast + 1)) * BLOCK_MS) / 1000;
  t.ok(Math.abs(afterSilence - SILENCE_S) <= 1, `the backup ${afterSilence.toFixed(2)} s after main went silent (silence_s ${SILENCE_S} +- 1 s)`);
  const backupAlone = firstRun(audio.labels, 'backup', 50, backupOn);
  noSilentBlock(t, audio, backupAlone, audio.labels.length, 'once the backup is on air');
  noSilentBlock(t, audio, start, mainLast, 'while main had its tone');
  noClick(t, audio, start, audio.labels.length, 'across the test (the silence fades in 10 ms at the sender)');
});
