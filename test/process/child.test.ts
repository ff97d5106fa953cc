import t from 'tap';
import { launchChild, runFilter } from '../../src/process/child.js';

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

void t.test('runFilter: stdin and stdout streamed through a real child; a consumer that fails ends it', async (t) => {
  // 8 MiB through `cat`: far more than a pipe holds, so both ends must be streamed at once.
  const chunk = Buffer.alloc(1024 * 1024, 7);
  let bytes = 0;
  const result = await runFilter('cat', [], {}, 30_000, Array<Buffer>(8).fill(chunk), async (stdout) => {
    for await (const piece of stdout) bytes += (piece as Buffer).length;
  });
  t.equal(result.exitCode, 0);
  t.equal(bytes, 8 * chunk.length, 'every byte came back');

  // No timeout of its own: were the child not ended, this would hang until tap's.
  const endless = (function* (): Generator<Buffer> {
    for (let i = 0; i < 1_000_000; i++) yield chunk;
  })();
  await t.rejects(
    runFilter('cat', [], {}, 0, endless, async (stdout) => {
      for await (const piece of stdout) if ((piece as Buffer).length > 0) throw new Error('disk full');
    }),
    { message: 'disk full' },
    'the consumer\'s error is the result',
  );
});
