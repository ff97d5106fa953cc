/**
 * Busy loops for overload tests, each eating one core: `timeout` ends each by itself after
 * `seconds`; teardown kills each whole process group (timeout and its shell) at once. Each in its
 * own session, like any program started apart from the engine (its own scheduler autogroup).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Test } from 'tap';

export function busyLoops(t: Test, count: number, nice: number, seconds: number): ChildProcess[] {
  const loops = Array.from({ length: count }, () =>
    spawn('nice', ['-n', String(nice), 'timeout', String(seconds), 'sh', '-c', 'while :; do :; done'], { stdio: 'ignore', detached: true }));
  t.teardown(() => stopLoops(loops));
  return loops;
}

export function stopLoops(loops: ChildProcess[]): void {
  for (const loop of loops) {
    try {
      if (loop.pid !== undefined) process.kill(-loop.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}
