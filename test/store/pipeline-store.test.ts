import { chmodSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { PipelineStore, type PipelineRecord } from '../../src/store/pipeline-store.js';
import { newPipelineId, PIPELINE_ID } from '../../src/store/ids.js';
import { parsePipelineSpec } from '../../src/spec/validate.js';
import { EXAMPLE } from '../fixtures/example.js';

const record = (seq: number, createdAt: string): PipelineRecord => ({
  id: newPipelineId(),
  seq,
  created_at: createdAt,
  spec: parsePipelineSpec(EXAMPLE),
});

void t.test('records survive a reopen, in creation order', async (t) => {
  const dir = t.testdir();
  const store = new PipelineStore(dir);
  await store.open();
  const a = record(1, '2026-11-21T10:00:00.000Z');
  const b = record(2, '2026-11-21T10:00:00.000Z');
  const c = record(3, '2026-11-21T09:00:00.000Z');
  for (const r of [a, b, c]) await store.put(r);
  const { records, damaged } = await new PipelineStore(dir).open();
  t.same(damaged, []);
  t.same(records.map((r) => r.id), [c.id, a.id, b.id]);
  t.same(records[1], a, 'the whole record comes back');
  await store.remove(a.id);
  await store.remove(a.id); // twice is fine
  t.same((await new PipelineStore(dir).open()).records.map((r) => r.id), [c.id, b.id]);
  t.same(readdirSync(path.join(dir, 'pipelines')).filter((f) => f.endsWith('.tmp')), [], 'no temp files left');
});

void t.test('a damaged record is set aside and reported, never blocks the others', async (t) => {
  const dir = t.testdir();
  const store = new PipelineStore(dir);
  await store.open();
  const good = record(1, '2026-11-21T10:00:00.000Z');
  await store.put(good);
  const bad = record(2, '2026-11-21T10:00:01.000Z');
  await store.put(bad);
  const badFile = path.join(dir, 'pipelines', `${bad.id}.json`);
  writeFileSync(badFile, readFileSync(badFile, 'utf8').slice(0, 40)); // a torn write
  const wrong = record(3, '2026-11-21T10:00:02.000Z');
  await store.put(wrong);
  const wrongFile = path.join(dir, 'pipelines', `${wrong.id}.json`);
  writeFileSync(wrongFile, readFileSync(wrongFile, 'utf8').replace('"port": 9000', '"port": 99999'));
  writeFileSync(path.join(dir, 'pipelines', 'pl_leftover1234.json.123.tmp'), '{');
  const { records, damaged } = await new PipelineStore(dir).open();
  t.same(records.map((r) => r.id), [good.id]);
  t.equal(damaged.length, 2);
  t.match(damaged.map((d) => d.reason).join('\n'), /spec\.input\.port must be <= 65535/);
  const files = readdirSync(path.join(dir, 'pipelines'));
  t.equal(files.filter((f) => f.includes('.damaged-')).length, 2, 'kept aside for an operator');
  t.equal(files.filter((f) => f.endsWith('.tmp')).length, 0, 'an unfinished write is dropped');
});

void t.test('ids are pl_ and 16 base62 characters', async (t) => {
  const ids = new Set(Array.from({ length: 2000 }, newPipelineId));
  t.equal(ids.size, 2000);
  for (const id of ids) t.match(id, /^pl_[0-9A-Za-z]{16}$/);
  t.ok(PIPELINE_ID.test('pl_abcdefghijkl'));
  t.notOk(PIPELINE_ID.test('pl_../../etc'));
});

void t.test('records are 0600 in a 0700 folder whatever the umask; older 0640 records are narrowed', async (t) => {
  const dir = t.testdir();
  const store = new PipelineStore(dir);
  await store.open();
  const old = process.umask(0o002);
  t.teardown(() => process.umask(old));
  const secret = record(1, '2026-11-21T10:00:00.000Z');
  secret.spec = parsePipelineSpec({ ...EXAMPLE, input: { type: 'srt', port: 9000, passphrase: 'correct-horse-battery' } });
  const plain = record(2, '2026-11-21T10:00:01.000Z');
  await store.put(secret);
  await store.put(plain);
  const modeOf = (file: string): number => statSync(file).mode & 0o777;
  for (const r of [secret, plain]) t.equal(modeOf(path.join(dir, 'pipelines', `${r.id}.json`)), 0o600, 'every record 0600');
  t.equal(modeOf(path.join(dir, 'pipelines')), 0o700);
  const legacy = path.join(dir, 'pipelines', `${plain.id}.json`);
  chmodSync(legacy, 0o640);
  const { records } = await new PipelineStore(dir).open();
  t.equal(modeOf(legacy), 0o600, 'narrowed on open');
  t.same(records[0]?.spec.input, { type: 'srt', port: 9000, latency: 120, passphrase: 'correct-horse-battery', pbkeylen: 16 }, 'the secret comes back for the next start');
});

void t.test('a record that is not JSON is reported without quoting its text', async (t) => {
  const dir = t.testdir();
  await new PipelineStore(dir).open();
  const id = newPipelineId();
  writeFileSync(path.join(dir, 'pipelines', `${id}.json`), '{"format": 1, "spec": {"input": {"passphrase": "correct-horse-battery"');
  const { damaged } = await new PipelineStore(dir).open();
  t.equal(damaged.length, 1);
  t.equal(damaged[0]?.reason, 'not valid JSON');
});

void t.test('a record\'s version comes back; records without one are version 1 (read as absent); a bad one is damaged', async (t) => {
  const dir = t.testdir();
  const store = new PipelineStore(dir);
  await store.open();
  const changed = { ...record(1, '2026-11-21T10:00:00.000Z'), version: 7 };
  const plain = record(2, '2026-11-21T11:00:00.000Z');
  await store.put(changed);
  await store.put(plain);
  const bad = record(3, '2026-11-21T12:00:00.000Z');
  await store.put(bad);
  const file = path.join(dir, 'pipelines', `${bad.id}.json`);
  writeFileSync(file, readFileSync(file, 'utf8').replace('"seq": 3', '"seq": 3, "version": 0'));
  const { records, damaged } = await new PipelineStore(dir).open();
  t.same(records.map((r) => r.version), [7, undefined]);
  t.equal(damaged.length, 1);
  t.match(damaged[0]?.reason, 'version is not a positive integer');
});
