import t from 'tap';
import { launchChild } from '../../src/process/child.js';

const run = async (script: string): Promise<{ lines: string[]; polled: boolean; exitCode: number | undefined }> => {
  const lines: string[] = [];
  const child = launchChild({ command: '/usr/bin/python3', args: ['-c', script], env: {}, onStdoutLine: (line) => lines.push(line), onStderrLine: () => undefined });
  const exit = await child.exited;
  return { lines, polled: child.stdoutPolled, exitCode: exit.exitCode };
};

void t.test('a child\'s stdout is read in batches: every line, whole, in order, the last without its break', async (t) => {
  // 20 000 numbered lines in writes of odd sizes, a line of 200 000 bytes (more than one read),
  // a multi-byte character cut by writes, a CRLF line, and a last line without a line break.
  const script = [
    'import os, sys, time',
    'out = "".join(f"line {i}\\n" for i in range(20000)).encode()',
    'for k in range(0, len(out), 4093): os.write(1, out[k:k + 4093])',
    'time.sleep(0.25)',
    'os.write(1, b"x" * 200000 + b"\\n")',
    'e = "é€ and more\\n".encode()',
    'os.write(1, e[:1]); time.sleep(0.15); os.write(1, e[1:3]); time.sleep(0.15); os.write(1, e[3:])',
    'os.write(1, b"windows\\r\\n")',
    'os.write(1, b"the end")',
  ].join('\n');
  const { lines, polled, exitCode } = await run(script);
  t.equal(exitCode, 0);
  t.ok(polled, 'stdout was a FIFO read by the poller');
  t.equal(lines.length, 20004);
  t.ok(lines.slice(0, 20000).every((line, i) => line === `line ${i}`), 'the 20 000 numbered lines, in order');
  t.equal(lines[20000], 'x'.repeat(200000), 'a 200 000-byte line whole');
  t.equal(lines[20001], 'é€ and more', 'a character split across writes');
  t.equal(lines[20002], 'windows', 'CRLF');
  t.equal(lines[20003], 'the end', 'the last line without a break');
});

void t.test('several children at once: each gets its own lines, and each ends when its child does', async (t) => {
  const script = (n: number, ms: number) => `import os, time\nfor i in range(${n}):\n  os.write(1, f"${n}:{i}\\n".encode()); time.sleep(${ms / 1000})`;
  const results = await Promise.all([run(script(30, 10)), run(script(5, 100)), run(script(1, 0))]);
  t.same(results.map((r) => r.lines), [30, 5, 1].map((n) => Array.from({ length: n }, (_, i) => `${n}:${i}`)));
});

void t.test('a child whose own child keeps stdout open: the stream ends with the last writer', async (t) => {
  // The shell exits at once; its background sleeper holds stdout 0.5 s longer and then writes.
  const lines: string[] = [];
  const child = launchChild({ command: '/bin/sh', args: ['-c', 'echo first; (sleep 0.5; echo late) &'], env: {}, onStdoutLine: (line) => lines.push(line), onStderrLine: () => undefined });
  await child.exited;
  t.same(lines, ['first', 'late']);
});

void t.test('where no FIFO can be made (no mkfifo on PATH), stdout is read as a stream: the same lines', async (t) => {
  const path = process.env.PATH;
  process.env.PATH = '/nonexistent';
  t.teardown(() => {
    process.env.PATH = path;
  });
  const lines: string[] = [];
  const child = launchChild({ command: '/bin/sh', args: ['-c', 'echo one; echo two; printf three'], env: {}, onStdoutLine: (line) => lines.push(line), onStderrLine: () => undefined });
  process.env.PATH = path;
  t.equal((await child.exited).exitCode, 0);
  t.notOk(child.stdoutPolled, 'not polled');
  t.same(lines, ['one', 'two', 'three']);
});
