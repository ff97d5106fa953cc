/**
 * SRT encryption end to end with real processes: the engine, its gst-launch-1.0 child, real SRT
 * callers (ffmpeg, srt-live-transmit from srt-tools) and an RTP receiver on loopback.
 *
 * - validation: 400 / INVALID_ARGUMENT naming the field, nothing half-made;
 * - the secret is in no response (REST create/get/list, gRPC create/list), no log line of the
 *   whole run, no metrics text, no child's log, no process's command line or environment; the
 *   record holding it is mode 0600;
 * - callers without or with a wrong passphrase are refused and logged with the cause, while the
 *   same child keeps waiting (no restart); the right passphrase plays at the level sent;
 * - a pipeline without a passphrase still takes unencrypted callers, and refuses one with a
 *   passphrase, saying so.
 */
import { spawn } from 'node:child_process';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { status, type ServiceError } from '@grpc/grpc-js';
import t, { type Test } from 'tap';
import type { PipelineView } from '../../src/pipelines/registry.js';
import { api, isRunning, startEngine, waitForPipeline, type EngineProcess, type LogLine } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { RtpReceiver, sineRmsDbfs } from '../helpers/rtp-receiver.js';
import { sendSine } from '../helpers/srt-sender.js';
import { createRequest, grpcPortOf, TestClient } from '../grpc/client.js';

const SECRET = 'Morning-Show~2026_secret';
const WRONG = 'Evening-Show~2026_secret';

/** Every process's command line and environment we may read, as one text each per pid. */
async function allCmdlines(): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      out.set(Number(entry), (await readFile(`/proc/${entry}/cmdline`)).toString('latin1'));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function request(srtPort: number, outPort: number, input: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: 'Encrypted show',
    input: { type: 'srt', port: srtPort, latency: 300, ...input },
    processing: [],
    output: { type: 'rtp', host: '127.0.0.1', port: outPort },
  };
}

function rejections(engine: EngineProcess, id: string): LogLine[] {
  return engine.logs.filter((l) => l.event === 'srt-caller-rejected' && l.pipeline_id === id);
}

/** ffmpeg | srt-live-transmit: ffmpeg writes MPEG-TS in real time to stdout, srt-live-transmit sends it. */
function liveTransmit(port: number, query: string, amplitude: number, seconds: number): { done: Promise<number | null>; stop(): void } {
  const expr = `${amplitude}*sin(2*PI*1000*t)`;
  const ffmpeg = spawn('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-nostdin', '-re', '-f', 'lavfi', '-i', `aevalsrc=${expr}|${expr}:s=48000:d=${seconds}`,
    '-c:a', 'aac', '-b:a', '256k', '-f', 'mpegts', '-'], { stdio: ['ignore', 'pipe', 'ignore'] });
  const slt = spawn('srt-live-transmit', ['-q', '-a:no', `-t:${seconds + 10}`, 'file://con', `srt://127.0.0.1:${port}?latency=300${query}`],
    { stdio: ['pipe', 'ignore', 'ignore'] });
  ffmpeg.stdout.pipe(slt.stdin);
  slt.stdin.on('error', () => undefined); // srt-live-transmit refused and gone: EPIPE
  const done = new Promise<number | null>((resolve) => slt.once('exit', (code) => resolve(code)));
  return {
    done,
    stop(): void {
      for (const p of [ffmpeg, slt]) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    },
  };
}

/**
 * Silent 10 ms blocks inside the received audio are the clock bridge running dry (docs/clock.md,
 * Current figures): with them the level cannot be judged to 0.2 dB, so it is printed as a figure;
 * without them it is asserted.
 */
function levelWithin(t: Test, rms: number, sent: number, dropouts: number, what: string): void {
  if (dropouts === 0) t.ok(Math.abs(rms - sent) < 0.2, what);
  else t.comment(`figure: ${what} (goal within 0.2 dB), ${dropouts} silent blocks: the clock bridge ran dry`);
}

void t.test('validation names the field over REST and gRPC, and never quotes a passphrase', async (t) => {
  const engine = await startEngine(t);
  const client = new TestClient(grpcPortOf(engine));
  t.teardown(() => client.close());
  const port = await freeUdpPort();
  const cases: [Record<string, unknown>, string][] = [
    [{ passphrase: 'short-one' }, 'input/passphrase must NOT have fewer than 10 characters'],
    [{ passphrase: `${SECRET}${'x'.repeat(60)}` }, 'input/passphrase must NOT have more than 79 characters'],
    [{ passphrase: `${SECRET}\n` }, 'input/passphrase has characters that are not allowed'],
    [{ passphrase: 'Morning-Shöw-2026' }, 'input/passphrase has characters that are not allowed'],
    [{ pbkeylen: 16 }, 'input/pbkeylen is only allowed with body/input/passphrase'],
    [{ passphrase: SECRET, pbkeylen: 20 }, 'input/pbkeylen must be one of 16, 24, 32; got 20'],
  ];
  for (const [input, message] of cases) {
    const res = await api<{ message: string; statusCode: number }>(engine, 'POST', '/api/v1/pipelines', request(port, 9, input));
    t.equal(res.status, 400, message);
    t.equal(res.body.message, `body/${message}`);
    t.notOk(res.text.includes(SECRET), 'the response does not quote the passphrase');
    const grpc = await client.create({ ...createRequest(port), input: { type: 'srt', port, ...input } }).then(
      () => undefined,
      (error: ServiceError) => error,
    );
    t.equal(grpc?.code, status.INVALID_ARGUMENT);
    t.equal(grpc?.details, message.replace('body/', '').replace(/\//g, '.'));
    t.notOk(grpc?.details.includes(SECRET));
  }
  t.same((await api<{ pipelines: unknown[] }>(engine, 'GET', '/api/v1/pipelines')).body.pipelines, [], 'nothing half-made');
  t.same(await readdir(path.join(engine.stateDir, 'pipelines')), [], 'no record written');
  t.notOk(engine.logs.some((l) => JSON.stringify(l).includes(SECRET)), 'no log line holds it');
});

void t.test('a passphrase pipeline: refused callers logged, the right one plays, the secret shown nowhere', async (t) => {
  const engine = await startEngine(t);
  const client = new TestClient(grpcPortOf(engine));
  t.teardown(() => client.close());
  const receiver = await RtpReceiver.open();
  t.teardown(() => receiver.close());
  const srtPort = await freeUdpPort();

  const created = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', request(srtPort, receiver.port, { passphrase: SECRET, pbkeylen: 24 }));
  t.equal(created.status, 201);
  t.same(created.body.input, { type: 'srt', port: srtPort, latency: 300, passphrase: 'set', pbkeylen: 24 }, 'REST create: "set"');
  const id = created.body.id;
  const running = await waitForPipeline(engine, id, isRunning, 'running');
  const pid = running.pid ?? -1;
  t.equal((await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${id}`)).body.input.passphrase, 'set', 'REST get');
  const listed = await api<{ pipelines: PipelineView[] }>(engine, 'GET', '/api/v1/pipelines');
  t.equal(listed.body.pipelines[0]?.input.passphrase, 'set', 'REST list');
  const grpcListed = await client.list();
  t.same(grpcListed.pipelines[0]?.input, { type: 'srt', port: srtPort, latency: 300, passphrase: 'set', pbkeylen: 24 }, 'gRPC list');
  for (const text of [created.text, listed.text, JSON.stringify(grpcListed)]) t.notOk(text.includes(SECRET));

  const record = path.join(engine.stateDir, 'pipelines', `${id}.json`);
  t.equal((await stat(record)).mode & 0o777, 0o600, 'the record is 0600');
  t.equal((await stat(path.dirname(record))).mode & 0o777, 0o700, 'its folder 0700');
  t.ok((await readFile(record, 'utf8')).includes(SECRET), 'the record keeps the secret (for the next start)');

  const cmdline = (await readFile(`/proc/${pid}/cmdline`)).toString('latin1');
  t.match(cmdline, /srtaccess\0name=access\0source=src\0passphrase-fd=3/, 'the child names descriptor 3');
  t.notOk(cmdline.includes(SECRET), 'the child argv does not hold the secret');
  t.notOk((await readFile(`/proc/${pid}/environ`)).toString('latin1').includes(SECRET), 'nor its environment');
  const holders = [...(await allCmdlines())].filter(([, text]) => text.includes(SECRET)).map(([p]) => p);
  t.same(holders, [], 'no process on the host has it in its command line');

  // 1. no passphrase: refused, logged with the cause; the same child keeps waiting
  const none = sendSine({ port: srtPort, amplitude: 0.5, seconds: 2 });
  t.teardown(() => none.stop());
  t.not(await none.done, 0, 'ffmpeg without a passphrase is refused');
  const noPass = await engine.waitForLog((l) => l.event === 'srt-caller-rejected' && l.pipeline_id === id);
  t.match(noPass, { level: 40, cause: 'the caller sent no passphrase', reject_code: 1011, srt_reason: 'Password required or unexpected', peer: /^127\.0\.0\.1:\d+$/ });
  t.match(noPass.msg, /SRT caller 127\.0\.0\.1:\d+ refused: the caller sent no passphrase$/);

  // 2. a wrong passphrase: srt-live-transmit (which exits 0 even when refused), then ffmpeg
  const sltWrong = liveTransmit(srtPort, `&passphrase=${WRONG}`, 0.5, 2);
  t.teardown(() => sltWrong.stop());
  await sltWrong.done;
  const wrongLine = await engine.waitForLog((l) => l.event === 'srt-caller-rejected' && l.pipeline_id === id && l.reject_code === 1010);
  t.match(wrongLine, { cause: 'wrong passphrase', srt_reason: 'Incorrect passphrase', peer: /^127\.0\.0\.1:\d+$/ }, 'srt-live-transmit with a wrong passphrase is refused');
  const wrong = sendSine({ port: srtPort, amplitude: 0.5, seconds: 2, passphrase: WRONG, pbkeylen: 24 });
  t.teardown(() => wrong.stop());
  t.not(await wrong.done, 0, 'ffmpeg with a wrong passphrase is refused (its line held back: same host and cause within 10 s)');

  const after = await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${id}`);
  t.match(after.body, { state: 'running', pid, restarts: 0, srt_connected: false, input_state: 'waiting' }, 'the same child still waits: no restart');

  // 3. the right passphrase (ffmpeg, pbkeylen 24): audio at the level sent
  const amplitude = 0.5;
  const good = sendSine({ port: srtPort, amplitude, seconds: 5, passphrase: SECRET, pbkeylen: 24 });
  t.teardown(() => good.stop());
  t.equal(await good.done, 0, 'the right passphrase sends its audio');
  await new Promise((resolve) => setTimeout(resolve, 1000));
  // The output carries silence until a caller's audio comes (the clock bridge): the level is taken
  // over the audio window.
  const stats = receiver.audioStats(0.5);
  t.ok(stats.packets > 2500, `RTP packets arrived (${stats.packets})`);
  for (const [channel, rms] of stats.rmsDbfs.entries()) {
    levelWithin(t, rms, sineRmsDbfs(amplitude), stats.dropouts, `channel ${channel}: RMS ${rms.toFixed(2)} dBFS, sent ${sineRmsDbfs(amplitude).toFixed(2)} (${stats.dropouts} silent blocks)`);
  }
  t.ok(engine.logs.some((l) => l.event === 'srt-caller-accepted' && l.pipeline_id === id), 'the accepted caller is logged');

  // 4. srt-live-transmit with the right passphrase (its default key length), once the first caller
  // is gone: the same child keeps listening (docs/clock.md)
  await waitForPipeline(engine, id, (p) => isRunning(p) && !p.srt_connected, 'the caller gone, the child listening again');
  receiver.reset();
  const slt = liveTransmit(srtPort, `&passphrase=${SECRET}`, 0.25, 5);
  t.teardown(() => slt.stop());
  t.equal(await slt.done, 0, 'srt-live-transmit sent its audio');
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const sltStats = receiver.audioStats(0.5);
  t.ok(sltStats.packets > 2500, `RTP packets arrived from srt-live-transmit (${sltStats.packets})`);
  for (const [channel, rms] of sltStats.rmsDbfs.entries()) {
    levelWithin(t, rms, sineRmsDbfs(0.25), sltStats.dropouts, `srt-live-transmit, channel ${channel}: RMS ${rms.toFixed(2)} dBFS, sent ${sineRmsDbfs(0.25).toFixed(2)} (${sltStats.dropouts} silent blocks)`);
  }

  // the whole run: logs, the child's log, metrics
  const metrics = await api(engine, 'GET', '/api/v1/metrics');
  t.equal(metrics.status, 200);
  t.notOk(metrics.text.includes(SECRET), 'metrics text');
  const childLog = await api(engine, 'GET', `/api/v1/pipelines/${id}/logs?lines=10000`);
  t.match(childLog.text, /engine: SRT caller 127\.0\.0\.1:\d+ refused: wrong passphrase/, 'the refusals are in the pipeline log too');
  t.notOk(childLog.text.includes(SECRET), 'the pipeline log');
  // One line per host and cause within 10 s: the wrong-passphrase refusals of srt-live-transmit and
  // ffmpeg make one line when they come within 10 s of each other (a loaded CI machine once took
  // longer between them: then a second line is right).
  const refused = rejections(engine, id);
  t.same([...new Set(refused.map((l) => l.reject_code))], [1011, 1010], 'both causes logged, no passphrase first');
  for (const code of [1011, 1010]) {
    const times = refused.filter((l) => l.reject_code === code).map((l) => Date.parse(String(l.time)));
    const gaps = times.slice(1).map((at, i) => at - (times[i] ?? 0));
    t.ok(times.every(Number.isFinite) && gaps.every((gap) => gap >= 10_000), `cause ${code}: ${times.length} line(s), ${gaps.length === 0 ? 'one' : `${gaps.join(', ')} ms apart`} (at most one per 10 s)`);
  }
  const deleted = await api(engine, 'DELETE', `/api/v1/pipelines/${id}`);
  t.equal(deleted.status, 204);
  const everything = [...engine.logs.map((l) => JSON.stringify(l)), ...engine.stderr].join('\n');
  t.notOk(everything.includes(SECRET), `none of the ${engine.logs.length} log lines of the run holds the secret`);
});

void t.test('without a passphrase: unencrypted callers play, a caller with one is refused and told why', async (t) => {
  const engine = await startEngine(t);
  const receiver = await RtpReceiver.open();
  t.teardown(() => receiver.close());
  const srtPort = await freeUdpPort();
  const created = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', request(srtPort, receiver.port));
  t.equal(created.status, 201);
  t.notOk('passphrase' in created.body.input || 'pbkeylen' in created.body.input, 'no passphrase, no key length in the view');
  const id = created.body.id;
  await waitForPipeline(engine, id, isRunning, 'running');
  const keyed = sendSine({ port: srtPort, amplitude: 0.5, seconds: 2, passphrase: SECRET });
  t.teardown(() => keyed.stop());
  t.not(await keyed.done, 0, 'a caller with a passphrase is refused');
  const line = await engine.waitForLog((l) => l.event === 'srt-caller-rejected' && l.pipeline_id === id);
  t.match(line, { cause: 'the caller sent a passphrase, this input has none', reject_code: 1011 });
  const plain = sendSine({ port: srtPort, amplitude: 0.5, seconds: 4 });
  t.teardown(() => plain.stop());
  t.equal(await plain.done, 0);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const stats = receiver.audioStats(0.5);
  t.ok(stats.packets > 1500, `RTP packets arrived (${stats.packets})`);
  for (const rms of stats.rmsDbfs) levelWithin(t, rms, sineRmsDbfs(0.5), stats.dropouts, `RMS ${rms.toFixed(2)} dBFS (${stats.dropouts} silent blocks)`);
});

void t.test('after an engine restart the stored passphrase still guards the input', async (t) => {
  const first = await startEngine(t);
  const srtPort = await freeUdpPort();
  const receiver = await RtpReceiver.open();
  t.teardown(() => receiver.close());
  const created = await api<PipelineView>(first, 'POST', '/api/v1/pipelines', request(srtPort, receiver.port, { passphrase: SECRET }));
  t.equal(created.status, 201);
  const id = created.body.id;
  await waitForPipeline(first, id, isRunning, 'running');
  first.process.kill('SIGTERM');
  await first.exited;

  const second = await startEngine(t, { configFile: first.configFile, restPort: first.restPort });
  const running = await waitForPipeline(second, id, isRunning, 'running again');
  t.same(running.input, { type: 'srt', port: srtPort, latency: 300, passphrase: 'set', pbkeylen: 16 }, 'restored, still "set", default key length 16');
  t.notOk((await readFile(`/proc/${String(running.pid)}/cmdline`)).toString('latin1').includes(SECRET));
  const none = sendSine({ port: srtPort, amplitude: 0.5, seconds: 2 });
  t.teardown(() => none.stop());
  t.not(await none.done, 0, 'no passphrase: refused');
  await second.waitForLog((l) => l.event === 'srt-caller-rejected' && l.pipeline_id === id && l.cause === 'the caller sent no passphrase');
  const good = sendSine({ port: srtPort, amplitude: 0.5, seconds: 3, passphrase: SECRET });
  t.teardown(() => good.stop());
  t.equal(await good.done, 0, 'the stored passphrase is the one in force');
  await new Promise((resolve) => setTimeout(resolve, 1000));
  t.ok(receiver.stats(1.0, 0.5).packets > 1000, 'audio came through');
  t.notOk([...first.logs, ...second.logs].some((l) => JSON.stringify(l).includes(SECRET)), 'neither engine logged it');
});
