import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { classifyExit, lastErrorLine, PREROLL_FAILED } from '../../src/supervisor/exit.js';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/gst-launch-1.22');
const lines = (name: string, stream: 'stderr' | 'stdout') => readFileSync(path.join(dir, `${name}.${stream}`), 'utf8').split('\n').filter((l) => l !== '');
const fixture = (name: string) => ({
  stderr: lines(name, 'stderr'),
  exitCode: Number(readFileSync(path.join(dir, `${name}.code`), 'utf8').trim()),
});

void t.test('an unknown element is permanent, with gst-launch words as the reason', async (t) => {
  const f = fixture('unknown-element');
  const cls = classifyExit({ exitCode: f.exitCode, signal: undefined, stderr: f.stderr, audioSeen: false });
  t.same(cls, { kind: 'permanent', reason: 'WARNING: erroneous pipeline: no element "nosuchelement"' });
});

void t.test('a property gst-launch cannot set is permanent', async (t) => {
  const f = fixture('bad-property');
  const cls = classifyExit({ exitCode: f.exitCode, signal: undefined, stderr: f.stderr, audioSeen: false });
  t.equal(cls.kind, 'permanent');
});

void t.test('a bind failure is retried, and the reason names the address', async (t) => {
  const f = fixture('bind-failure');
  t.ok(f.stderr.some((l) => PREROLL_FAILED.test(l)), 'gst-launch also says the pipeline would not preroll');
  const cls = classifyExit({ exitCode: f.exitCode, signal: undefined, stderr: f.stderr, audioSeen: false });
  t.equal(cls.kind, 'retry');
  t.match(cls.kind === 'retry' ? cls.reason : '', /GstSRTSrc:srtsrc0: Could not open resource for reading\. Failed to open SRT: Cannot bind to 0\.0\.0\.0:19031/);
  const killed = classifyExit({ exitCode: undefined, signal: 'SIGKILL', stderr: f.stderr, audioSeen: false, killedBy: { cause: 'preroll-hang' } });
  t.same(killed, { kind: 'retry', reason: 'the pipeline would not preroll and the child did not exit: killed and restarted' }, 'a bind failure that hangs is still a failure');
});

void t.test('an SRT caller that connected and left without sending is no failure', async (t) => {
  const f = fixture('srt-empty-caller');
  t.equal(f.exitCode, 1, 'gst-launch exits 1, as for a failure');
  t.ok(lines('srt-empty-caller', 'stdout').includes('Setting pipeline to PLAYING ...'), 'the child had reached PLAYING');
  const cls = classifyExit({ exitCode: f.exitCode, signal: undefined, stderr: f.stderr, audioSeen: false });
  t.equal(cls.kind, 'no-data');
  t.match(cls.kind === 'no-data' ? cls.reason : '', /source ended before sending any audio/);
  // The same words after audio went through are no "empty source": a runtime error, retried.
  t.equal(classifyExit({ exitCode: f.exitCode, signal: undefined, stderr: f.stderr, audioSeen: true }).kind, 'retry');
});

void t.test('a stdin graph whose source sent nothing hangs after the preroll failure; killed, it is no failure', async (t) => {
  const f = fixture('stdin-empty-preroll-hang');
  const stdout = lines('stdin-empty-preroll-hang', 'stdout');
  t.notOk(stdout.includes('Setting pipeline to PLAYING ...'), 'it never reached PLAYING');
  t.ok(f.stderr.some((l) => PREROLL_FAILED.test(l)), 'the line the supervisor watches for is there');
  t.equal(f.exitCode, 137, 'it did not exit by itself (killed)');
  const cls = classifyExit({ exitCode: undefined, signal: 'SIGKILL', stderr: f.stderr, audioSeen: false, killedBy: { cause: 'preroll-hang' } });
  t.equal(cls.kind, 'no-data');
  const byTimeout = classifyExit({ exitCode: undefined, signal: 'SIGKILL', stderr: f.stderr, audioSeen: false, killedBy: { cause: 'not-playing', afterMs: 10_000 } });
  t.equal(byTimeout.kind, 'no-data');
});

void t.test('a child killed by the supervisor is reported as such', async (t) => {
  const idle = ['Setting pipeline to PAUSED ...', 'Pipeline is PREROLLING ...'];
  t.same(
    classifyExit({ exitCode: undefined, signal: 'SIGKILL', stderr: idle, audioSeen: false, killedBy: { cause: 'not-playing', afterMs: 10_000 } }),
    { kind: 'retry', reason: 'did not reach PLAYING within 10 s: killed and restarted' },
  );
  t.same(
    classifyExit({ exitCode: undefined, signal: 'SIGKILL', stderr: [], audioSeen: true, killedBy: { cause: 'stalled', silentMs: 5200 } }),
    { kind: 'retry', reason: 'stalled: no statistics from the child for 5.2 s' },
  );
  const empty = fixture('srt-empty-caller');
  t.equal(
    classifyExit({ exitCode: undefined, signal: 'SIGKILL', stderr: empty.stderr, audioSeen: false, killedBy: { cause: 'stalled', silentMs: 6000 } }).kind,
    'retry',
    'a stall is a failure whatever the output said before',
  );
});

void t.test('exit 0 is a clean end after audio, an empty stream before; a signal is retried', async (t) => {
  t.same(classifyExit({ exitCode: 0, signal: undefined, stderr: [], audioSeen: true }), { kind: 'clean' });
  t.same(classifyExit({ exitCode: 0, signal: undefined, stderr: [], audioSeen: false }), { kind: 'no-data', reason: 'the stream ended before any audio went through' });
  t.same(classifyExit({ exitCode: undefined, signal: 'SIGKILL', stderr: [], audioSeen: true }), { kind: 'retry', reason: 'killed by SIGKILL' });
  t.same(classifyExit({ exitCode: 3, signal: undefined, stderr: [], audioSeen: true }), { kind: 'retry', reason: 'exited with code 3' });
});

void t.test('lastErrorLine finds nothing in clean output', async (t) => {
  t.equal(lastErrorLine(['Setting pipeline to PAUSED ...', 'Freeing pipeline ...']), undefined);
});
