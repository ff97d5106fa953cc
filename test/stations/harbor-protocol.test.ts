/**
 * The harbor's side of the Icecast protocol over raw TCP against a real engine: every refusal is
 * answered and logged once with the client's address and the reason, the credential challenge is
 * an info line, /admin/metadata answers as Icecast 2.4 does, and no source can lock the station
 * (one that sends nothing, or only bytes that never play, is dropped within bounds; the child it
 * held is reused or replaced without a failure or back-off). A real ffmpeg source plays after.
 */
import { connect, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import type { StationView } from '../../src/stations/station.js';
import { eventually, startEngine, type EngineProcess, type LogLine } from '../helpers/engine-process.js';
import { RtpReceiver, sineRmsDbfs } from '../helpers/rtp-receiver.js';
import { freeStationNumber, getStation, harborPortOf, sendIcecast, stationToml, whenStation as whenStationWith } from '../helpers/stations.js';

const ID = 'proto';
const PASSWORD = 'proto-pw';
const AUTH = `Authorization: Basic ${Buffer.from(`source:${PASSWORD}`).toString('base64')}`;

interface Exchange {
  socket: Socket;
  local: string;
  /** Everything the harbor sent until it closed (or `until` resolved). */
  answer: Promise<string>;
}

/** Opens a connection, sends `text`, and collects the answer until the harbor closes it. */
async function send(t: Test, port: number, text: string | Buffer): Promise<Exchange> {
  const socket = connect({ host: '127.0.0.1', port });
  t.teardown(() => {
    socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.on('error', () => undefined);
  let got = '';
  socket.on('data', (chunk: Buffer) => {
    got += chunk.toString('latin1');
  });
  const answer = new Promise<string>((resolve) => socket.once('close', () => resolve(got)));
  socket.write(text);
  return { socket, local: `127.0.0.1:${String(socket.localPort)}`, answer };
}

const station = (engine: EngineProcess): Promise<StationView> => getStation(engine, ID);
const whenStation = (engine: EngineProcess, ok: (s: StationView) => boolean, what: string, timeoutMs?: number): Promise<StationView> =>
  whenStationWith(engine, ID, ok, what, timeoutMs);

const linesFrom = (engine: EngineProcess, remote: string): LogLine[] => engine.logs.filter((l) => l.remote === remote);

void t.test('refusals, the challenge, metadata and sources that would lock the station', async (t) => {
  const number = await freeStationNumber();
  const port = harborPortOf(number);
  const receiver = await RtpReceiver.open();
  t.teardown(() => receiver.close());
  const engine = await startEngine(t, { extraToml: stationToml({ id: ID, number, rtpPort: receiver.port, harbor: 'icecast', password: PASSWORD }) });
  const waiting = await whenStation(engine, (s) => s.pid !== null, 'a child waiting for a source');

  await t.test('each refusal is answered and logged once with the address and the reason', async (t) => {
    const cases: { request: string; status: string; level: number; reason: RegExp }[] = [
      { request: 'HELLO\r\n\r\n', status: '400', level: 40, reason: /not an Icecast source request/ },
      { request: 'DELETE /live HTTP/1.1\r\n\r\n', status: '405', level: 40, reason: /method DELETE/ },
      { request: `SOURCE /live HTTP/1.0\r\nAuthorization: Basic ${Buffer.from('source:nope').toString('base64')}\r\n\r\n`, status: '401', level: 40, reason: /wrong credentials/ },
      { request: `PUT /live HTTP/1.1\r\n${AUTH}\r\nTransfer-Encoding: gzip\r\n\r\n`, status: '501', level: 40, reason: /transfer encoding gzip/ },
      { request: `PUT /live HTTP/1.1\r\n${AUTH}\r\nContent-Length: lots\r\n\r\n`, status: '400', level: 40, reason: /Content-Length/ },
      { request: `PUT /live HTTP/1.1\r\nX-Big: ${'x'.repeat(9000)}\r\n\r\n`, status: '431', level: 40, reason: /request head over 8192 bytes/ },
      { request: `GET /admin/metadata?mode=updinfo&mount=/none&song=x HTTP/1.0\r\n${AUTH}\r\n\r\n`, status: '400', level: 40, reason: /Source does not exist/ },
    ];
    for (const c of cases) {
      const ex = await send(t, port, c.request);
      const answer = await ex.answer;
      t.match(answer, new RegExp(`^HTTP/1\\.0 ${c.status} `), `${c.request.slice(0, 30).trim()}... -> ${c.status}`);
      const lines = await eventually(() => {
        const l = linesFrom(engine, ex.local).filter((x) => x.event === 'harbor-refused');
        return l.length > 0 ? l : undefined;
      }, 5000, `the refusal of ${ex.local} logged`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      t.equal(linesFrom(engine, ex.local).filter((x) => x.event === 'harbor-refused').length, 1, 'logged once');
      t.equal(lines[0]?.status, c.status);
      t.equal(lines[0]?.level, c.level, 'a warning');
      t.match(String(lines[0]?.reason), c.reason);
      t.match(lines[0]?.msg ?? '', `from ${ex.local} refused (${c.status})`);
    }
  });

  await t.test('a request without credentials gets the 401 challenge and an info line, no warning', async (t) => {
    const ex = await send(t, port, 'SOURCE /live HTTP/1.0\nContent-Type: audio/mpeg\n\n');
    const answer = await ex.answer;
    t.match(answer, /^HTTP\/1\.0 401 Unauthorized\r\n/);
    t.match(answer, 'WWW-Authenticate: Basic realm=');
    const line = await engine.waitForLog((l) => l.remote === ex.local && l.event === 'harbor-auth-challenge', 5000);
    t.equal(line.level, 30, 'info');
    t.notOk(linesFrom(engine, ex.local).some((l) => l.level >= 40), 'no warning for the challenge');
  });

  await t.test('a source that connects and sends nothing is dropped after the idle bound; the child waits on', async (t) => {
    const before = await station(engine);
    const ex = await send(t, port, `SOURCE /idle HTTP/1.0\r\n${AUTH}\r\nContent-Type: audio/mpeg\r\n\r\n`);
    await whenStation(engine, (s) => s.source?.mount === '/idle', 'the idle source is connected');
    const answer = await ex.answer; // closed by the harbor
    t.match(answer, /^HTTP\/1\.0 200 OK\r\n/);
    const gone = await engine.waitForLog((l) => l.remote === ex.local && l.event === 'source-disconnected', 15_000);
    t.match(gone.msg, /nothing received for 10000 ms/);
    const after = await station(engine);
    t.equal(after.pid, before.pid, 'the same child waits for the next source');
    t.equal(after.restarts, before.restarts, 'no restart');
    t.equal(after.last_error, null);
    t.notOk(engine.logs.some((l) => l.event === 'retry'), 'no back-off');
  });

  await t.test('a source whose bytes never play is dropped after the first-audio bound; the child is replaced without back-off', async (t) => {
    const before = await station(engine);
    const ex = await send(t, port, `PUT /trickle HTTP/1.1\r\n${AUTH}\r\nContent-Type: audio/mpeg\r\n\r\n`);
    const trickle = setInterval(() => ex.socket.write(Buffer.from([0x49])), 1500); // keeps the idle bound away, never a frame
    t.teardown(() => clearInterval(trickle));
    const gone = await engine.waitForLog((l) => l.remote === ex.local && l.event === 'source-disconnected', 20_000);
    clearInterval(trickle);
    t.match(gone.msg, /did not start playing within 10000 ms/);
    t.match(gone.msg, /the child is replaced/);
    const after = await whenStation(engine, (s) => s.pid !== null && s.pid !== before.pid, 'a new child');
    t.equal(after.restarts, before.restarts, 'a replacement, not a restart after a failure');
    t.equal(after.last_error, null, 'no failure');
    t.notOk(engine.logs.some((l) => l.event === 'retry'), 'no back-off');
  });

  await t.test('a source that sends only Ogg headers and leaves: the child is replaced without failure or back-off', async (t) => {
    const before = await station(engine);
    const { execFileSync } = await import('node:child_process');
    const { readFileSync } = await import('node:fs');
    const path = await import('node:path');
    const dir = t.testdir();
    const wav = path.join(dir, 'h.wav');
    execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'aevalsrc=0.1*sin(2*PI*440*t):s=48000:d=2', wav]);
    execFileSync('oggenc', ['-Q', '-o', path.join(dir, 'h.ogg'), wav]);
    const ogg = readFileSync(path.join(dir, 'h.ogg'));
    // The identification page and the comment/setup page(s): everything before the first audio page.
    let headersEnd = 0;
    for (let at = ogg.indexOf('OggS'); at >= 0; at = ogg.indexOf('OggS', at + 4)) {
      if (ogg.readBigInt64LE(at + 6) > 0n) break; // granule position > 0: audio
      headersEnd = ogg.indexOf('OggS', at + 4);
    }
    t.ok(headersEnd > 0 && headersEnd < ogg.length, `Ogg headers: ${headersEnd} of ${ogg.length} bytes`);
    const ex = await send(t, port, Buffer.concat([Buffer.from(`SOURCE /headers HTTP/1.0\r\n${AUTH}\r\nContent-Type: application/ogg\r\n\r\n`), ogg.subarray(0, headersEnd)]));
    await whenStation(engine, (s) => s.source?.mount === '/headers', 'the source is connected');
    ex.socket.end();
    const gone = await engine.waitForLog((l) => l.remote === ex.local && l.event === 'source-no-audio', 10_000);
    t.match(gone.msg, /left before its audio played: the child is replaced/);
    // The new child plays (silence) at once: its graph is live from the clock bridge on.
    const after = await whenStation(engine, (s) => s.pid !== null && s.pid !== before.pid && (s.state === 'starting' || s.state === 'running'), 'a new child');
    t.equal(after.restarts, before.restarts, 'a replacement, not a restart after a failure');
    t.equal(after.last_error, null, 'no failure');
    t.notOk(engine.logs.some((l) => l.event === 'retry'), 'no back-off');
  });

  await t.test('Content-Length: 0 (a probe) is answered and leaves the child as it was', async (t) => {
    const before = await station(engine);
    const ex = await send(t, port, `PUT /probe HTTP/1.1\r\n${AUTH}\r\nContent-Length: 0\r\nExpect: 100-continue\r\n\r\n`);
    t.equal(await ex.answer, 'HTTP/1.1 100 Continue\r\nContent-Length: 0\r\n\r\nHTTP/1.0 200 OK\r\nServer: audio-engine\r\n\r\n', "Icecast's two answers, then the close");
    await engine.waitForLog((l) => l.remote === ex.local && l.event === 'source-disconnected', 5000);
    const after = await station(engine);
    t.equal(after.pid, before.pid, 'the same child');
  });

  await t.test('a real source plays; a second one is refused; a title update answers as Icecast does', async (t) => {
    receiver.reset();
    const source = sendIcecast({ port, password: PASSWORD, amplitude: 0.5, seconds: 6, codec: 'mp3', mount: '/live' });
    t.teardown(() => source.stop());
    await whenStation(engine, (s) => s.source?.mount === '/live' && s.state === 'running', 'ffmpeg plays');
    const busy = await send(t, port, `SOURCE /live HTTP/1.0\r\n${AUTH}\r\n\r\n`);
    t.match(await busy.answer, /^HTTP\/1\.0 403 Forbidden\r\n[\s\S]*\r\n\r\nMountpoint in use\n$/);
    const meta = await send(t, port, `GET /admin/metadata?mode=updinfo&mount=%2Flive&song=Caf%C3%A9%20Live HTTP/1.0\r\n${AUTH}\r\n\r\n`);
    const answer = await meta.answer;
    t.match(answer, /^HTTP\/1\.0 200 OK\r\n/);
    t.match(answer, 'Content-Type: text/xml');
    t.match(answer, '<iceresponse><message>Metadata update successful</message><return>1</return></iceresponse>');
    const live = await station(engine);
    t.equal(live.source?.title, 'Café Live', 'the title is stored and shown');
    // The log line reaches the test through the engine's stdout, which may trail the HTTP answer
    const logged = await engine.waitForLog((l) => l.event === 'source-title', 5000);
    t.equal(logged.title, 'Café Live');
    t.equal(await source.done, 0, 'ffmpeg sent its audio');
    await new Promise((resolve) => setTimeout(resolve, 700));
    // The audio window: the output sends digital silence before the source's first audio.
    const stats = receiver.audioStats(0.2);
    for (const [channel, rms] of stats.rmsDbfs.entries()) {
      t.ok(Math.abs(rms - sineRmsDbfs(0.5)) < 0.5, `channel ${channel}: RMS ${rms.toFixed(2)} dBFS`);
    }
  });

  t.equal(waiting.restarts, 0);
  t.notMatch(engine.logs.map((l) => JSON.stringify(l)).join('\n'), PASSWORD, 'the password is in no log');
});
