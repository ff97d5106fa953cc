import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { classifyExit, lastErrorLine } from '../../src/supervisor/exit.js';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/gst-launch-1.22');
const fixture = (name: string) => ({
  stderr: readFileSync(path.join(dir, `${name}.stderr`), 'utf8').split('\n').filter((l) => l !== ''),
  exitCode: Number(readFileSync(path.join(dir, `${name}.code`), 'utf8').trim()),
});

void t.test('an unknown element is permanent, with gst-launch words as the reason', async (t) => {
  const f = fixture('unknown-element');
  const cls = classifyExit({ exitCode: f.exitCode, signal: undefined, stderr: f.stderr });
  t.same(cls, { kind: 'permanent', reason: 'WARNING: erroneous pipeline: no element "nosuchelement"' });
});

void t.test('a property gst-launch cannot set is permanent', async (t) => {
  const f = fixture('bad-property');
  const cls = classifyExit({ exitCode: f.exitCode, signal: undefined, stderr: f.stderr });
  t.equal(cls.kind, 'permanent');
});

void t.test('a bind failure is retried, and the reason names the address', async (t) => {
  const f = fixture('bind-failure');
  const cls = classifyExit({ exitCode: f.exitCode, signal: undefined, stderr: f.stderr });
  t.equal(cls.kind, 'retry');
  t.match(cls.kind === 'retry' ? cls.reason : '', /GstSRTSrc:srtsrc0: Could not open resource for reading\. Failed to open SRT: Cannot bind to 0\.0\.0\.0:19031/);
});

void t.test('exit 0 is a clean end; a signal is retried', async (t) => {
  t.same(classifyExit({ exitCode: 0, signal: undefined, stderr: [] }), { kind: 'clean' });
  t.same(classifyExit({ exitCode: undefined, signal: 'SIGKILL', stderr: [] }), { kind: 'retry', reason: 'killed by SIGKILL' });
  t.same(classifyExit({ exitCode: 3, signal: undefined, stderr: [] }), { kind: 'retry', reason: 'exited with code 3' });
});

void t.test('lastErrorLine finds nothing in clean output', async (t) => {
  t.equal(lastErrorLine(['Setting pipeline to PAUSED ...', 'Freeing pipeline ...']), undefined);
});
