/**
 * Chained Ogg from the real clients that send it: ezstream (an Ogg playlist: track 2 is a new
 * chain), ices2 (playlist input, re-encoded) and liquidsoap %vorbis (a new chain at each title).
 * A new chain plays on in the SAME child (same pid, no exit while the source is connected) with
 * at most 50 ms of silence, measured on the station's RTP; the audio keeps its level.
 */
import t, { type Test } from 'tap';
import type { StationView } from '../../src/stations/station.js';
import { longestSilenceMs } from '../helpers/audio-gaps.js';
import type { ClientProcess } from '../helpers/client-process.js';
import { startEngine, type EngineProcess } from '../helpers/engine-process.js';
import { runEzstream } from '../helpers/ezstream.js';
import { runIces2 } from '../helpers/ices2.js';
import { runLiquidsoap } from '../helpers/liquidsoap.js';
import { RtpReceiver, sineRmsDbfs } from '../helpers/rtp-receiver.js';
import { sineFile } from '../helpers/sine-files.js';
import { freeStationNumber, getStation, harborPortOf, stationToml, whenStation as whenStationWith } from '../helpers/stations.js';

const ID = 'chained';
const PASSWORD = 'chain-pw';
const MAX_SILENCE_MS = 50;
/** liquidsoap type-checks its whole library before it connects: 1 s when idle, 15 s measured at load 24. */
const LIQUIDSOAP_START_MS = 60_000;

/**
 * The longest lag liquidsoap reported of its own clock, in ms: on a loaded machine its streaming
 * loop falls behind and stops sending ("We must catchup 3.71 seconds!"), then sends faster. That
 * pause is the source's, not ours: the output's silence may be that much longer.
 */
function liquidsoapLagMs(output: string): number {
  let worst = 0;
  for (const m of output.matchAll(/We must catchup ([0-9]+(?:\.[0-9]+)?) seconds/g)) worst = Math.max(worst, Number(m[1]) * 1000);
  return worst;
}

const station = (engine: EngineProcess): Promise<StationView> => getStation(engine, ID);
const whenStation = (engine: EngineProcess, ok: (s: StationView) => boolean, what: string, timeoutMs?: number): Promise<StationView> =>
  whenStationWith(engine, ID, ok, what, timeoutMs);

/**
 * While `client` streams: the child that took it must be the one that ends after it (no exit
 * in between), and the audio must have no silence over the bound.
 */
async function playsOn(t: Test, engine: EngineProcess, receiver: RtpReceiver, start: () => ClientProcess, o: { what: string; amplitude: number; minSeconds: number; connectMs?: number; sourceLagMs?: (output: string) => number }): Promise<ClientProcess> {
  const before = await whenStation(engine, (s) => s.pid !== null && s.source === null, 'a child waiting for a source');
  receiver.reset();
  const client = start();
  const exitsBefore = engine.logs.filter((l) => l.event === 'exit').length;
  const live = await whenStation(engine, (s) => s.source !== null && s.state === 'running', `${o.what} connected and playing`, o.connectMs ?? 20_000).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}\n${o.what}: ${client.output().slice(-2000)}`);
  });
  t.equal(live.pid, before.pid, 'the waiting child took the source');
  // While the source is connected the child never exits: a new chain plays on in it.
  let pidChanged = false;
  const watch = setInterval(() => {
    void station(engine).then((s) => {
      if (s.source !== null && s.pid !== live.pid) pidChanged = true;
    }, () => undefined);
  }, 300);
  t.teardown(() => clearInterval(watch));
  const code = await client.done;
  t.equal(code, 0, `${o.what} exited 0`, { output: client.output().slice(-2000) });
  const ended = await whenStation(engine, (s) => s.restarts > before.restarts && s.source === null, 'the source ended and the child after it', 30_000);
  clearInterval(watch);
  t.notOk(pidChanged, 'the same child all along');
  const exits = engine.logs.filter((l) => l.event === 'exit').slice(exitsBefore);
  t.equal(exits.length, 1, 'exactly one child exit: at the end of the source');
  t.equal(exits[0]?.exit_code, 0, 'a clean exit (EOS at the end of the source)');
  t.equal(ended.last_error, null);
  // The audio window (first to last 10 ms block with audio, less 0.2 s at each end): the output
  // sends digital silence before the source's first audio and after its last.
  const margin = 0.2;
  const stats = receiver.audioStats(margin);
  t.ok(stats.audioSeconds >= o.minSeconds, `${o.what}: ${stats.audioSeconds.toFixed(1)} s of audio (at least ${o.minSeconds} s)`);
  for (const [channel, rms] of stats.rmsDbfs.entries()) {
    t.ok(Math.abs(rms - sineRmsDbfs(o.amplitude)) < 0.5, `${o.what}: channel ${channel}: RMS ${rms.toFixed(2)} dBFS, sent ${sineRmsDbfs(o.amplitude).toFixed(2)} dBFS`);
  }
  const tail = stats.frames / 48000 - stats.startSeconds - stats.audioSeconds;
  const silence = longestSilenceMs(receiver.interleaved(stats.startSeconds + margin, tail + margin));
  const lag = o.sourceLagMs?.(client.output()) ?? 0;
  const bound = MAX_SILENCE_MS + lag;
  const why = lag > 0 ? ` + the source's own reported lag of ${lag.toFixed(0)} ms` : '';
  t.ok(silence <= bound, `${o.what}: longest silence ${silence.toFixed(1)} ms (at most ${MAX_SILENCE_MS} ms${why})`);
  return client;
}

void t.test('chained Ogg plays on in the same child', async (t) => {
  const dir = t.testdir();
  const number = await freeStationNumber();
  const port = harborPortOf(number);
  const receiver = await RtpReceiver.open(0, { receiveBufferBytes: 4 << 20 });
  t.teardown(() => receiver.close());
  const engine = await startEngine(t, { extraToml: stationToml({ id: ID, number, rtpPort: receiver.port, harbor: 'icecast', password: PASSWORD }) });

  await t.test('ezstream: an Ogg playlist, track 2 is a new chain', async (t) => {
    const a = sineFile(dir, 'ogg-a', { codec: 'ogg', seconds: 4, amplitude: 0.5, title: 'Chain A' });
    const b = sineFile(dir, 'ogg-b', { codec: 'ogg', seconds: 4, amplitude: 0.5, title: 'Chain B' });
    const ez = await playsOn(t, engine, receiver, () => runEzstream(t, { dir, port, password: PASSWORD, mount: '/ez.ogg', format: 'Ogg', files: [a.file, b.file], timeoutMs: 40_000 }), { what: 'ezstream Ogg', amplitude: 0.5, minSeconds: 6 });
    t.notMatch(ez.output(), /reconnect/, 'ezstream never had to reconnect');
    const titles = engine.logs.filter((l) => l.event === 'source-title' && l.mount === '/ez.ogg').map((l) => l.title);
    t.same(titles, ['Chain A', 'Chain B'], 'the title of each chain is stored and logged');
  });

  await t.test('ices2: playlist input re-encoded, a new chain per track', async (t) => {
    const a = sineFile(dir, 'ices-a', { codec: 'ogg', seconds: 4, amplitude: 0.4, title: 'Ices A' });
    const b = sineFile(dir, 'ices-b', { codec: 'ogg', seconds: 4, amplitude: 0.4, title: 'Ices B' });
    const ices = await playsOn(t, engine, receiver, () => runIces2(t, { dir, port, password: PASSWORD, mount: '/ices.ogg', files: [a.file, b.file], timeoutMs: 40_000 }), { what: 'ices2', amplitude: 0.4, minSeconds: 6 });
    t.notMatch(ices.output(), /Send error|reconnect/i, 'ices2 never lost its connection');
  });

  await t.test('liquidsoap %vorbis: a new chain at each title', async (t) => {
    const liq = await playsOn(t, engine, receiver, () => runLiquidsoap(t, { dir, port, password: PASSWORD, mount: '/liq.ogg', encoder: 'vorbis', amplitude: 0.5, seconds: 11, titleEverySeconds: 3 }), { what: 'liquidsoap %vorbis', amplitude: 0.5, minSeconds: 8, connectMs: LIQUIDSOAP_START_MS, sourceLagMs: liquidsoapLagMs });
    t.notMatch(liq.output(), /Error while sending data|reconnect/, 'liquidsoap never lost its connection');
    const titles = engine.logs.filter((l) => l.event === 'source-title' && l.mount === '/liq.ogg').map((l) => String(l.title));
    t.ok(titles.filter((title) => /^Title [0-9]+$/.test(title)).length >= 2, `the titles of the chains are logged: ${titles.join(', ')}`);
  });
});
