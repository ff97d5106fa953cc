import t from 'tap';
import { launchChild } from '../../src/process/child.js';

void t.test('extraInput: the child reads each from descriptors 3, 4 (through setpriv), and they end', async (t) => {
  const lines: string[] = [];
  const child = launchChild({
    command: '/bin/sh',
    // cat ends only at end of file: each pipe is closed after its bytes
    args: ['-c', 'cat <&3; echo; cat <&4; echo'],
    env: {},
    onStdoutLine: (line) => lines.push(line),
    onStderrLine: () => undefined,
    extraInput: [new TextEncoder().encode('correct-horse-battery'), new TextEncoder().encode('second')],
  });
  const exit = await child.exited;
  t.equal(exit.exitCode, 0);
  t.same(lines.slice(0, 2), ['correct-horse-battery', 'second']);
});

void t.test('without extraInput the child has no descriptor 3', async (t) => {
  const lines: string[] = [];
  const child = launchChild({
    command: '/bin/sh',
    args: ['-c', 'if [ -e /proc/$$/fd/3 ]; then echo open; else echo closed; fi'],
    env: {},
    onStdoutLine: (line) => lines.push(line),
    onStderrLine: () => undefined,
  });
  t.equal((await child.exited).exitCode, 0);
  t.same(lines, ['closed']);
});
