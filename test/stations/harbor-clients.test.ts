/**
 * The Icecast harbor with the real source clients users run (Debian 12 packages): darkice 1.3,
 * ezstream 1.0 (libshout 2.4), liquidsoap 2.1 (%mp3 with title updates), curl (-T file with
 * Content-Length and Expect: 100-continue; -T - chunked) and ffmpeg (PUT, chunked). Each one
 * connects to a station of a real engine, and its audio comes out on the station's RTP at the
 * level it was sent; titles sent with /admin/metadata are stored and logged. All on 127.0.0.1.
 */
import t, { type Test } from 'tap';
import type { StationView } from '../../src/stations/station.js';
import type { ClientProcess } from '../helpers/client-process.js';
import { runCurlSource } from '../helpers/curl-source.js';
import { runDarkice } from '../helpers/darkice.js';
import { api, startEngine, type EngineProcess } from '../helpers/engine-process.js';
import { runEzstream } from '../helpers/ezstream.js';
import { runFfmpegChunked } from '../helpers/ffmpeg-chunked.js';
import { runLiquidsoap } from '../helpers/liquidsoap.js';
import { RtpReceiver, sineRmsDbfs } from '../helpers/rtp-receiver.js';
import { sineFile } from '../helpers/sine-files.js';
import { dashboardOf, freeStationNumber, harborPortOf, stationToml, whenStation as whenStationWith } from '../helpers/stations.js';

const ID = 'clients';
const PASSWORD = 'harbor-pw';

const whenStation = (engine: EngineProcess, ok: (s: StationView) => boolean, what: string, timeoutMs?: number): Promise<StationView> =>
  whenStationWith(engine, ID, ok, what, timeoutMs);

/** A child waiting for a source. */
const ready = (engine: EngineProcess): Promise<StationView> => whenStation(engine, (s) => s.pid !== null && s.source === null && (s.state === 'starting' || s.state === 'running'), 'a child waiting for a source');

/** The audio of one source has come out: its child has played it and exited (restarts went up). */
async function played(t: Test, engine: EngineProcess, client: ClientProcess, restartsBefore: number, what: string): Promise<StationView> {
  const code = await client.done;
  t.equal(code, 0, `${what} exited 0`, { output: client.output().slice(-1500) });
  return whenStation(engine, (s) => s.restarts > restartsBefore && s.source === null, 'the child played the source and ended', 30_000);
}

function checkLevel(t: Test, receiver: RtpReceiver, amplitude: number, minSeconds: number, what: string): void {
  // The audio window (first to last 10 ms block with audio, less 0.2 s at each end): the output
  // sends digital silence before a source's first audio and after its last.
  const stats = receiver.audioStats(0.2);
  t.ok(stats.audioSeconds >= minSeconds, `${what}: ${stats.audioSeconds.toFixed(1)} s of audio on RTP (at least ${minSeconds} s)`);
  // A track change of an MP3 playlist carries the encoder's delay and padding (LAME: up to ~50 ms
  // of silence in the files themselves); anything longer would be the engine's.
  t.ok(stats.dropouts <= 5, `${what}: ${stats.dropouts} silent 10 ms blocks inside the audio window (at most 5)`);
  const expected = sineRmsDbfs(amplitude);
  for (const [channel, rms] of stats.rmsDbfs.entries()) {
    t.ok(Math.abs(rms - expected) < 0.5, `${what}: channel ${channel}: RMS ${rms.toFixed(2)} dBFS, sent ${expected.toFixed(2)} dBFS`);
  }
}

void t.test('real Icecast source clients play on a station', async (t) => {
  const dir = t.testdir();
  const number = await freeStationNumber();
  const port = harborPortOf(number);
  const receiver = await RtpReceiver.open(0, { receiveBufferBytes: 4 << 20 });
  t.teardown(() => receiver.close());
  const engine = await startEngine(t, { extraToml: stationToml({ id: ID, number, rtpPort: receiver.port, harbor: 'icecast', password: PASSWORD }) });
  await ready(engine);

  await t.test('darkice 1.3 (bare-LF header lines, MP3 it encodes from real PCM)', async (t) => {
    const before = await ready(engine);
    receiver.reset();
    const { darkice } = runDarkice(t, { dir, port, password: PASSWORD, mount: '/darkice', seconds: 6, amplitude: 0.5 });
    const live = await whenStation(engine, (s) => s.source !== null, 'darkice connected');
    t.equal(live.source?.mount, '/darkice');
    t.match(live.source?.user_agent ?? '', /DarkIce\/1\.3/);
    await played(t, engine, darkice, before.restarts, 'darkice');
    checkLevel(t, receiver, 0.5, 4, 'darkice');
  });

  await t.test('curl -T file: Content-Length and Expect: 100-continue get a final status at the end of the body', async (t) => {
    const before = await ready(engine);
    receiver.reset();
    const mp3 = sineFile(dir, 'curl-length', { codec: 'mp3', seconds: 5, amplitude: 0.4 });
    const curl = runCurlSource(t, { port, password: PASSWORD, mount: '/curl', file: mp3.file, contentType: 'audio/mpeg', framing: 'length', timeoutMs: 20_000 });
    const started = Date.now();
    t.equal(await curl.done, 0, 'curl exited 0', { output: curl.output() });
    t.match(curl.output(), 'final-status=200', 'curl got its final status');
    t.ok(Date.now() - started < 5000, `curl finished in ${Date.now() - started} ms (before: it waited for the 10 s idle timeout)`);
    await played(t, engine, curl, before.restarts, 'curl -T file');
    checkLevel(t, receiver, 0.4, 3, 'curl -T file');
  });

  await t.test('curl -T - : a chunked body is decoded', async (t) => {
    const before = await ready(engine);
    receiver.reset();
    const mp3 = sineFile(dir, 'curl-chunked', { codec: 'mp3', seconds: 5, amplitude: 0.3 });
    const curl = runCurlSource(t, { port, password: PASSWORD, mount: '/chunked', file: mp3.file, contentType: 'audio/mpeg', framing: 'chunked', timeoutMs: 20_000 });
    t.equal(await curl.done, 0, 'curl exited 0', { output: curl.output() });
    t.match(curl.output(), 'final-status=200');
    await played(t, engine, curl, before.restarts, 'curl -T -');
    checkLevel(t, receiver, 0.3, 3, 'curl -T -');
    t.ok(engine.logs.some((l) => l.event === 'source-connected' && l.framing === 'chunked' && l.mount === '/chunked'), 'the harbor logged a chunked source');
  });

  await t.test('ffmpeg PUT -chunked_post 1: a chunked body in real time', async (t) => {
    const before = await ready(engine);
    receiver.reset();
    const ffmpeg = runFfmpegChunked(t, { port, password: PASSWORD, mount: '/ffmpeg', amplitude: 0.5, seconds: 5 });
    const live = await whenStation(engine, (s) => s.source !== null, 'ffmpeg connected');
    t.equal(live.source?.mount, '/ffmpeg');
    await played(t, engine, ffmpeg, before.restarts, 'ffmpeg');
    checkLevel(t, receiver, 0.5, 3, 'ffmpeg chunked');
  });

  await t.test('ezstream MP3 playlist: both tracks play, titles come through /admin/metadata', async (t) => {
    const before = await ready(engine);
    receiver.reset();
    const a = sineFile(dir, 'ez-a', { codec: 'mp3', seconds: 4, amplitude: 0.5, title: 'Harbor Track A' });
    const b = sineFile(dir, 'ez-b', { codec: 'mp3', seconds: 4, amplitude: 0.5, title: 'Harbor Track B' });
    const ez = runEzstream(t, { dir, port, password: PASSWORD, mount: '/ez.mp3', format: 'MP3', files: [a.file, b.file], timeoutMs: 30_000 });
    const first = await whenStation(engine, (s) => s.source?.title === 'Harbor Track A', 'the title of track 1');
    t.equal(first.source?.mount, '/ez.mp3');
    await whenStation(engine, (s) => s.source?.title === 'Harbor Track B', 'the title of track 2');
    await played(t, engine, ez, before.restarts, 'ezstream');
    checkLevel(t, receiver, 0.5, 6, 'ezstream MP3');
    const titles = engine.logs.filter((l) => l.event === 'source-title' && l.mount === '/ez.mp3').map((l) => l.title);
    t.same(titles, ['Harbor Track A', 'Harbor Track B'], 'each title logged once');
    t.ok(engine.logs.some((l) => l.event === 'harbor-auth-challenge' && l.level === 30), 'libshout first asks without credentials: an info line');
  });

  await t.test('liquidsoap %mp3 with title updates', async (t) => {
    const before = await ready(engine);
    receiver.reset();
    const liq = runLiquidsoap(t, { dir, port, password: PASSWORD, mount: '/liq.mp3', encoder: 'mp3', amplitude: 0.5, seconds: 9, titleEverySeconds: 3 });
    // liquidsoap type-checks its whole library before it connects: 1 s when idle, 15 s measured at load 24.
    const titled = await whenStation(engine, (s) => /^Title [0-9]+$/.test(s.source?.title ?? ''), 'a title from liquidsoap', 60_000);
    t.ok(titled.source?.title_updated_at !== null, 'the time of the title is kept');
    await played(t, engine, liq, before.restarts, 'liquidsoap');
    checkLevel(t, receiver, 0.5, 6, 'liquidsoap %mp3');
    t.notMatch(liq.output(), /Metadata update may have failed/, 'liquidsoap saw every title update accepted');
    t.ok(engine.logs.filter((l) => l.event === 'source-title' && l.mount === '/liq.mp3').length >= 2, 'titles logged');
  });

  const refusals = engine.logs.filter((l) => l.event === 'harbor-refused');
  t.same(refusals.map((l) => `${String(l.status)} ${String(l.reason)}`), [], 'no client was refused');
  const logs = await api(dashboardOf(engine), 'GET', `/api/stations/${ID}/logs?lines=10000`);
  t.match(logs.text, 'title on /ez.mp3: Harbor Track A', 'titles are in the station log');
  t.notMatch(`${logs.text}\n${engine.logs.map((l) => JSON.stringify(l)).join('\n')}`, PASSWORD, 'the password is in no log');
});
