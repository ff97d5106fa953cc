/**
 * Runs one third-party program (a source client, an encoder) for a test: no shell, its output
 * kept, killed after a bound, and killed in the test's teardown whatever happened.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Test } from 'tap';

export interface ClientProcess {
  process: ChildProcess;
  /** Resolves with the exit code (null after a signal) once the process is gone. */
  done: Promise<number | null>;
  /** stdout and stderr so far. */
  output(): string;
  stop(): void;
}

export interface ClientOptions {
  env?: Record<string, string>;
  cwd?: string;
  /** Killed (SIGKILL) after this long at the latest. */
  timeoutMs: number;
  /** Piped to the process's stdin (then ended), or the stdin is closed. */
  stdin?: NodeJS.ReadableStream;
}

export function runClient(t: Test, command: string, args: string[], options: ClientOptions): ClientProcess {
  const child = spawn(command, args, {
    stdio: [options.stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...options.env },
    cwd: options.cwd,
  });
  let output = '';
  const keep = (chunk: Buffer): void => {
    output += chunk.toString();
    if (output.length > 200_000) output = output.slice(-100_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  if (options.stdin !== undefined && child.stdin !== null) {
    child.stdin.on('error', () => {
      // the client closed its stdin early: its exit says why
    });
    options.stdin.pipe(child.stdin);
  }
  const done = new Promise<number | null>((resolve) => {
    child.once('error', (error) => {
      output += `\nspawn ${command}: ${error.message}`;
      resolve(-1);
    });
    child.once('exit', (code) => resolve(code));
  });
  const stop = (): void => {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) child.kill('SIGKILL');
  };
  const bound = setTimeout(stop, options.timeoutMs);
  void done.then(() => clearTimeout(bound));
  t.teardown(async () => {
    stop();
    await done;
  });
  return { process: child, done, output: () => output, stop };
}
