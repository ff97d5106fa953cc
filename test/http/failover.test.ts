/**
 * Failover over REST against a real engine: a backup port that clashes with an input or backup
 * port of any pipeline (or with its own input) is refused naming the field, nothing stored and
 * no child started; the view of a pipeline with a backup shows it (passphrase "set") and its
 * health fields. A fallback file outside `[engine] fallback_dir` (also through a symlink or
 * ".."), missing or not decodable is a 400 naming fallback.path with nothing stored, no child
 * and no decoded copy; a good one is decoded (by a real gst-launch-1.0) into the state dir, again
 * when the channels change, and its copy goes with the pipeline.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { PipelineView } from '../../src/pipelines/registry.js';
import { api, gstLaunchChildren, startEngine, type EngineProcess } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';

interface ErrorBody { statusCode: number; code: string; message: string }

function request(port: number, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: 'failover', input: { type: 'srt', port, latency: 120 }, processing: [], output: { type: 'rtp', host: '127.0.0.1', port: 5004 }, ...extra };
}

async function pipelineCount(engine: EngineProcess): Promise<number> {
  return (await api<{ pipelines: PipelineView[] }>(engine, 'GET', '/api/v1/pipelines')).body.pipelines.length;
}

void t.test('backup ports', async (t) => {
  const engine = await startEngine(t);
  const [a, b, c, d] = [await freeUdpPort(), await freeUdpPort(), await freeUdpPort(), await freeUdpPort()];
  const first = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', request(a, { backup: { type: 'srt', port: b, passphrase: 'backup-secret-1' }, failover: { loss_ms: 400 } }));
  t.equal(first.status, 201, first.text);
  t.same(first.body.backup, { type: 'srt', port: b, latency: 120, passphrase: 'set', pbkeylen: 16 }, 'the view shows the backup, never its secret');
  t.notMatch(first.text, /backup-secret-1/);
  t.same(first.body.failover, { silence_dbfs: -50, silence_s: 10, loss_ms: 400, return_s: 10, fallback_on_silence: false });
  t.equal(first.body.selection, 'auto');
  t.ok('active_input' in first.body, 'active_input is in the view (null before the first report)');
  t.same(Object.keys(first.body.inputs).sort(), ['backup', 'main']);
  const children = (await gstLaunchChildren(engine.stateDir)).length;

  const refusals: [Record<string, unknown>, number, string][] = [
    [request(c, { backup: { type: 'srt', port: c } }), 400, `body/backup/port must differ from body/input/port (${c})`],
    [request(c, { backup: { type: 'srt', port: a } }), 409, `backup.port ${a} is already in use by pipeline ${first.body.id}`],
    [request(c, { backup: { type: 'srt', port: b } }), 409, `backup.port ${b} is already in use by pipeline ${first.body.id}`],
    [request(b, { backup: { type: 'srt', port: c } }), 409, `input.port ${b} is already in use by pipeline ${first.body.id}`],
    [request(c, { backup: { type: 'srt', port: d }, failover: { loss_ms: 20 } }), 400, 'body/failover/loss_ms must be >= 50'],
    [request(c, { failover: { loss_ms: 300 } }), 400, 'body/failover is only allowed with'],
  ];
  for (const [body, status, message] of refusals) {
    const refused = await api<ErrorBody>(engine, 'POST', '/api/v1/pipelines', body);
    t.equal(refused.status, status, message);
    t.match(refused.body.message, message);
  }
  t.equal(await pipelineCount(engine), 1, 'nothing stored');
  t.equal((await gstLaunchChildren(engine.stateDir)).length, children, 'no child started');

  const second = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', request(c));
  t.equal(second.status, 201);
  t.equal(second.body.backup, undefined);
  t.same(Object.keys(second.body.inputs), ['main'], 'no backup: only main');
  const patched = await api<ErrorBody>(engine, 'PATCH', `/api/v1/pipelines/${second.body.id}`, { backup: { type: 'srt', port: b } });
  t.equal(patched.status, 409, 'PATCH: another pipeline\'s backup port');
  t.match(patched.body.message, `backup.port ${b} is already in use by pipeline ${first.body.id}`);
  const added = await api<PipelineView & { applied: string }>(engine, 'PATCH', `/api/v1/pipelines/${second.body.id}`, { backup: { type: 'srt', port: d } });
  t.equal(added.status, 200, added.text);
  t.equal(added.body.applied, 'restart');
  t.equal(added.body.backup?.port, d);
});

void t.test('fallback files: checked and decoded at create, removed with the pipeline', async (t) => {
  const dir = t.testdir();
  const fallbackDir = path.join(dir, 'fallback');
  const outside = path.join(dir, 'outside');
  mkdirSync(fallbackDir);
  mkdirSync(outside);
  const tone = path.join(fallbackDir, 'ident.flac');
  execFileSync('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100:duration=2', '-c:a', 'flac', tone]);
  execFileSync('ffmpeg', ['-v', 'error', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=1', '-c:a', 'flac', path.join(outside, 'other.flac')]);
  writeFileSync(path.join(fallbackDir, 'corrupt.flac'), randomBytes(64 * 1024));
  symlinkSync(path.join(outside, 'other.flac'), path.join(fallbackDir, 'escape.flac'));
  const engine = await startEngine(t, { dir, extraToml: 'fallback_dir = "fallback"' });
  const cacheDir = path.join(engine.stateDir, 'fallback');
  const children = (await gstLaunchChildren(engine.stateDir)).length;

  const file = (p: string): Record<string, unknown> => ({ fallback: { type: 'file', path: p } });
  const refusals: [Record<string, unknown>, string][] = [
    [file(path.join(outside, 'other.flac')), `fallback.path ${path.join(outside, 'other.flac')} is outside the fallback directory`],
    [file(path.join(fallbackDir, 'escape.flac')), 'is outside the fallback directory'],
    [file(`${fallbackDir}/../outside/other.flac`), 'body/fallback/path must be a normalised absolute path'],
    [file('ident.flac'), 'body/fallback/path'],
    [file(path.join(fallbackDir, 'missing.flac')), `fallback.path ${path.join(fallbackDir, 'missing.flac')} does not exist`],
    [file(path.join(fallbackDir, 'corrupt.flac')), `fallback.path ${path.join(fallbackDir, 'corrupt.flac')} could not be decoded as audio`],
    [file(fallbackDir), 'is outside the fallback directory'],
    [{ fallback: { type: 'file', path: tone, loop: false } }, 'body/fallback/loop'],
  ];
  for (const [extra, message] of refusals) {
    const refused = await api<ErrorBody>(engine, 'POST', '/api/v1/pipelines', request(await freeUdpPort(), extra));
    t.equal(refused.status, 400, message);
    t.match(refused.body.message, message);
  }
  t.equal(await pipelineCount(engine), 0, 'nothing stored');
  t.equal((await gstLaunchChildren(engine.stateDir)).length, children, 'no child started');
  t.same(existsSync(cacheDir) ? readdirSync(cacheDir) : [], [], 'no decoded copy left behind');

  const created = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', request(await freeUdpPort(), { ...file(tone), failover: { loss_ms: 200 } }));
  t.equal(created.status, 201, created.text);
  t.same(created.body.fallback, { type: 'file', path: tone, loop: true }, 'a fallback without a backup is allowed');
  const copies = readdirSync(cacheDir);
  t.equal(copies.length, 1);
  // 2 s at 44.1 kHz resampled to 48 kHz, 2 channels of F32: exactly 2 * 48000 frames (src/pipelines/fallback-cache.ts).
  t.equal(statSync(path.join(cacheDir, copies[0] ?? '')).size, 2 * 48000 * 2 * 4, 'the decoded copy holds the file\'s 2 s, to the frame');

  const badPatch = await api<ErrorBody>(engine, 'PATCH', `/api/v1/pipelines/${created.body.id}`, file(path.join(fallbackDir, 'corrupt.flac')));
  t.equal(badPatch.status, 400);
  t.match(badPatch.body.message, 'could not be decoded as audio');
  t.same(readdirSync(cacheDir), copies, 'a refused change keeps the copy');
  const mono = await api<PipelineView & { applied: string }>(engine, 'PATCH', `/api/v1/pipelines/${created.body.id}`, { output: { channels: 1 } });
  t.equal(mono.status, 200, mono.text);
  const monoCopies = readdirSync(cacheDir);
  t.equal(monoCopies.length, 1, 'the old copy is gone');
  t.not(monoCopies[0], copies[0], 'decoded again for one channel');
  t.equal(statSync(path.join(cacheDir, monoCopies[0] ?? '')).size, 2 * 48000 * 4, 'one channel: 2 s to the frame');

  t.equal((await api(engine, 'DELETE', `/api/v1/pipelines/${created.body.id}`)).status, 204);
  t.same(readdirSync(cacheDir), [], 'deleting the pipeline removes its decoded copy');
});
