/**
 * The test helpers' namespace sweep (test/helpers/netns.ts): a namespace the helpers made whose
 * creating process is gone (a test file tap killed at its timeout: no teardown ran) is removed,
 * with what still runs in it killed, at the next create; one of a live process and one of any
 * other name are left alone. Real namespaces (`ip netns`), real processes; needs root.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import t from 'tap';
import { canUseNetns, creatorOf, namespaceName, spawnIn, sweepStaleNamespaces } from '../helpers/netns.js';

const namespaces = (): string[] =>
  spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout.split('\n').map((line) => line.split(' ')[0] ?? '').filter((ns) => ns !== '');

/** A pid that was alive and is not any more: `true`, started and waited for. */
async function deadPid(): Promise<number> {
  const child = spawn('true');
  await once(child, 'exit');
  if (child.pid === undefined) throw new Error('true did not start');
  return child.pid;
}

void t.test('names: the helpers\' form carries the creating pid, nothing else is theirs', async (t) => {
  t.equal(namespaceName('st27c', 4194304, 'a'), 'aet-st27c-4194304-a');
  t.equal(creatorOf('aet-st27c-4194304-a'), 4194304);
  t.equal(creatorOf(namespaceName('ae67', process.pid, 'b')), process.pid);
  for (const other of ['st2712345a', 'aet-st27c-123-c', 'aet--123-a', 'aet-st27c-0123-a', 'xaet-ae67-123-a', 'aet-ae67-123-a-x', 'aet-toolongtag-123-a', 'cni-1234']) {
    t.equal(creatorOf(other), undefined, `${other} is not the helpers'`);
  }
  t.throws(() => namespaceName('st 27', 1, 'a'), /netns tag "st 27" must be/);
  t.throws(() => namespaceName('toolong', 1, 'a'), /must be a letter and up to 4 letters or digits/);
});

void t.test('the sweep removes a dead creator\'s namespace and kills what runs in it; others stay', { skip: canUseNetns() ? false : 'needs root and iproute2 (ip netns)' }, async (t) => {
  const dead = namespaceName('swp', await deadPid(), 'a');
  const live = namespaceName('swp', process.pid, 'b');
  const foreign = `swp${process.pid}x`;
  t.teardown(() => {
    for (const ns of [dead, live, foreign]) spawnSync('ip', ['netns', 'del', ns]);
  });
  for (const ns of [dead, live, foreign]) spawnSync('ip', ['netns', 'add', ns], { stdio: 'inherit' });
  t.same([dead, live, foreign].filter((ns) => namespaces().includes(ns)), [dead, live, foreign], 'the three namespaces exist');
  const sleeper = spawnIn(dead, 'sleep', ['60'], { stdio: 'ignore' });
  t.teardown(() => sleeper.kill('SIGKILL'));
  const exited = once(sleeper, 'exit');
  await t.resolves(async () => {
    // `ip netns exec` execs sleep once it has joined the namespace: wait until it is seen there (bounded).
    for (let i = 0; i < 100; i++) {
      if (spawnSync('ip', ['netns', 'pids', dead], { encoding: 'utf8' }).stdout.trim() !== '') return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('sleep never ran inside the namespace');
  }, 'a process runs inside the dead creator\'s namespace');

  // (Another test process's sweep may get to the dead creator's namespace first: it is gone either way.)
  const removed = sweepStaleNamespaces();
  t.notOk(removed.includes(live) || removed.includes(foreign), 'the sweep reports neither of the others');
  const after = namespaces();
  t.notOk(after.includes(dead), 'the dead creator\'s namespace is gone');
  t.ok(after.includes(live), 'a live creator\'s namespace (this test\'s) stays');
  t.ok(after.includes(foreign), 'a namespace not named by the helpers stays');
  const [, signal] = (await exited) as [number | null, NodeJS.Signals | null];
  t.equal(signal, 'SIGKILL', 'the process inside was killed');
});
