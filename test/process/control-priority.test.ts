/**
 * The engine's own scheduling (src/process/control-priority.ts) on a real process: a Node process
 * (main thread, V8's workers, libuv's pool) raised with util-linux's chrt, what it starts later
 * back at SCHED_OTHER, and lowered again. Needs CAP_SYS_NICE (root) or RLIMIT_RTPRIO >= 15.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { lowerControlPriority, raiseControlPriority } from '../../src/process/control-priority.js';

/** rt_priority (field 40) and policy (field 41) of /proc/PID/task/TID/stat. */
function scheduling(pid: number, tid: number): { rtPriority: number; policy: number } {
  const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields[0] is field 3
  return { rtPriority: Number(fields[40 - 3]), policy: Number(fields[41 - 3]) };
}
const threads = (pid: number): number[] => readdirSync(`/proc/${pid}/task`).map(Number);
const SCHED_OTHER = 0;
const SCHED_FIFO = 1;

void t.test('every thread raised, later threads and children start SCHED_OTHER, lowered again', async (t) => {
  // fs.stat on a timer keeps libuv's pool alive; SIGUSR2 starts a worker thread and a child process
  const script = `
    const { Worker } = require('node:worker_threads');
    setInterval(() => require('node:fs').stat('/', () => undefined), 50);
    process.on('SIGUSR2', () => {
      new Worker('setInterval(() => undefined, 1000)', { eval: true });
      require('node:child_process').spawn('sleep', ['30'], { stdio: 'ignore' });
    });
    process.stdout.write('up\\n');`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => {
    for (const c of childrenOf(child.pid ?? 0)) process.kill(c, 'SIGKILL');
    child.kill('SIGKILL');
  });
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  const pid = child.pid ?? 0;
  await new Promise((r) => setTimeout(r, 200)); // the pool's threads exist once a stat ran
  const before = threads(pid);
  t.ok(before.length >= 5, `the Node process has its threads (${before.length})`);

  const raised = await raiseControlPriority(15, pid);
  t.same(raised, { ok: true, priority: 15 });
  for (const tid of before) t.same(scheduling(pid, tid), { rtPriority: 15, policy: SCHED_FIFO }, `thread ${tid}: SCHED_FIFO 15`);

  child.kill('SIGUSR2');
  let later: number[] = [];
  let kids: number[] = [];
  for (let i = 0; i < 100 && (later.length === 0 || kids.length === 0); i++) {
    await new Promise((r) => setTimeout(r, 20));
    later = threads(pid).filter((tid) => !before.includes(tid));
    kids = childrenOf(pid);
  }
  t.ok(later.length > 0, 'a worker started after the raise');
  for (const tid of later) t.same(scheduling(pid, tid), { rtPriority: 0, policy: SCHED_OTHER }, `thread ${tid} started later: SCHED_OTHER (reset on fork)`);
  t.equal(kids.length, 1, 'a child process started after the raise');
  for (const kid of kids) t.same(scheduling(kid, kid), { rtPriority: 0, policy: SCHED_OTHER }, 'the child process: SCHED_OTHER');

  t.same(await lowerControlPriority(pid), { ok: true, priority: 0 });
  for (const tid of before) t.same(scheduling(pid, tid), { rtPriority: 0, policy: SCHED_OTHER }, `thread ${tid} lowered`);
});

void t.test('refused: the reason in chrt\'s words', async (t) => {
  const r = await raiseControlPriority(15, 2 ** 22 + 1); // above pid_max's largest value: no such process
  t.equal(r.ok, false);
  if (!r.ok) t.match(r.reason, /cannot obtain the list of tasks|No such process/, `reason: ${r.reason}`);
  t.same(await raiseControlPriority(0, process.pid), { ok: false, reason: 'priority 0 is not a SCHED_FIFO priority (1-99)' });
});

function childrenOf(pid: number): number[] {
  try {
    return threads(pid).flatMap((tid) => readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/).filter((x) => x !== '').map(Number));
  } catch {
    return [];
  }
}
