/**
 * Child processes: the only place that starts one (execa, never a shell).
 * Both outputs are always drained line by line: an unread pipe would block the child and stall
 * its audio. stdout, a line per bus message, is a FIFO read in batches with every other child's
 * (polled-stdout.ts); stderr, rare lines, a pipe read as a stream. On Linux every child is
 * started through `setpriv --pdeathsig SIGKILL`, so it dies with the engine even when the engine
 * is killed with SIGKILL.
 * stdin is closed unless a launcher asks for a writable one (`stdin: 'pipe'`: a station's Icecast
 * harbor feeds the source's body to the child); ending it is the child's end of stream.
 */
import { closeSync, existsSync, writeFileSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { createInterface } from 'node:readline';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { execa, type ResultPromise } from 'execa';
import { openPolledPipe, pollLines } from './polled-stdout.js';

export interface ChildExit {
  exitCode: number | undefined;
  signal: string | undefined;
  /** Set when the process could not be started at all. */
  spawnError: string | undefined;
}

export interface LaunchOptions {
  command: string;
  args: readonly string[];
  /** Added to the engine's environment. */
  env: Readonly<Record<string, string>>;
  onStdoutLine: (line: string) => void;
  onStderrLine: (line: string) => void;
  /** 'pipe': the child gets a writable stdin (ChildProcess.stdin); default 'ignore'. */
  stdin?: 'ignore' | 'pipe';
  /**
   * Data the child reads from its descriptors 3, 4, ... in this order: each a pipe that holds
   * these bytes and is then closed (secrets the child must not get through argv or environment,
   * which other processes can read in /proc). A null slot is a closed descriptor (the control
   * descriptor's place, or a secret the child does not need). Default none.
   */
  extraInput?: readonly (Uint8Array | null)[];
  /**
   * Niceness added to the child, relative to the engine's (0: the same). Set on the child's pid as
   * soon as it exists, before gst-launch makes its streaming threads, which inherit it; also on
   * the child's autogroup (its own session: `detached`), where the kernel groups by session
   * (sched_autogroup, a process outside a CPU cgroup), else a niceness would only order threads
   * within the child.
   */
  niceIncrement?: number;
  /**
   * The descriptor of the child's control channel (a socket the engine keeps open and writes
   * commands to for the child's whole life; ChildProcess.control), after the extraInput ones.
   * Descriptors between are closed ('ignore'). Default none.
   */
  controlFd?: number;
}

export interface ChildProcess {
  readonly pid: number | undefined;
  readonly exited: Promise<ChildExit>;
  /**
   * The child's stdin when launched with `stdin: 'pipe'`, else undefined. Write errors (the child
   * is gone: EPIPE) are swallowed here; a writer sees the stream destroyed.
   */
  readonly stdin: Writable | undefined;
  /** Why the niceness could not be set (setpriority refused), if it could not. */
  readonly niceError?: string;
  /** The writable end of the control channel when launched with `controlFd`, else undefined. */
  readonly control: Writable | undefined;
  /** Whether its stdout is read in batches (polled-stdout.ts), not as a stream (no FIFO could be made). */
  readonly stdoutPolled: boolean;
  /** Sends a signal; false when the process is already gone. */
  signal(signal: NodeJS.Signals): boolean;
}

const SETPRIV = '/usr/bin/setpriv';
const useSetpriv = process.platform === 'linux' && existsSync(SETPRIV);

function drain(stream: Readable | null, onLine: (line: string) => void): Promise<void> {
  if (stream === null) return Promise.resolve();
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  lines.on('line', (line) => {
    try {
      onLine(line);
    } catch {
      // A consumer's fault never stops the draining.
    }
  });
  return new Promise((resolve) => lines.once('close', resolve));
}

type ExtraSlot = 'ignore' | 'pipe' | Uint8Array;
/**
 * A descriptor of ours the child gets as it is (Node's spawn dups it). execa passes any integer
 * through to spawn, but its types list only 3 to 9 (a descriptor of the engine's own stdio
 * array); ours is wherever open() put it.
 */
type OwnDescriptor = 3;

function stdioOf(options: LaunchOptions, stdout: 'pipe' | number): ['ignore' | 'pipe', 'pipe' | OwnDescriptor, 'pipe', ...ExtraSlot[]] {
  const extra: ExtraSlot[] = (options.extraInput ?? []).map((slot) => slot ?? 'ignore');
  if (options.controlFd !== undefined) {
    const at = options.controlFd - 3;
    if (at < extra.length && extra[at] !== 'ignore') throw new Error(`control descriptor ${options.controlFd} is already taken`);
    while (extra.length < at) extra.push('ignore');
    extra[at] = 'pipe';
  }
  return [options.stdin ?? 'ignore', stdout as 'pipe' | OwnDescriptor, 'pipe', ...extra];
}

export function launchChild(options: LaunchOptions): ChildProcess {
  const [file, args] = useSetpriv
    ? [SETPRIV, ['--pdeathsig', 'SIGKILL', '--', options.command, ...options.args]]
    : [options.command, [...options.args]];
  const polled = openPolledPipe();
  let subprocess: ResultPromise;
  try {
    subprocess = execa(file, args, {
      reject: false,
      stdio: stdioOf(options, polled?.writeFd ?? 'pipe'),
      buffer: false,
      detached: true, // own process group: a Ctrl-C meant for the engine does not reach the child
      // Not execa's cleanup: it hooks SIGTERM and would kill the child before the supervisor can
      // end it with EOS. pdeathsig (above) covers an engine that dies without stopping it.
      cleanup: false,
      forceKillAfterDelay: false,
      env: options.env,
      extendEnv: true,
    });
  } finally {
    // The child has its copy (or never started): the stream ends when the child's end closes.
    if (polled !== undefined) closeSync(polled.writeFd);
  }
  const drained = Promise.all([
    polled !== undefined ? pollLines(polled.readFd, options.onStdoutLine) : drain(subprocess.stdout, options.onStdoutLine),
    drain(subprocess.stderr, options.onStderrLine),
  ]);
  const exited = subprocess.then(async (result) => {
    await drained;
    const spawnError = result.failed && result.exitCode === undefined && result.signal === undefined
      ? (result.cause instanceof Error ? result.cause.message : result.shortMessage)
      : undefined;
    return { exitCode: result.exitCode, signal: result.signal, spawnError };
  });
  let niceError: string | undefined;
  const increment = options.niceIncrement ?? 0;
  if (increment > 0 && subprocess.pid !== undefined) {
    const nice = Math.min(19, getPriority() + increment);
    try {
      setPriority(subprocess.pid, nice);
    } catch (error) {
      niceError = (error as Error).message;
    }
    try {
      writeFileSync(`/proc/${subprocess.pid}/autogroup`, String(nice));
    } catch {
      // No autogroups (disabled, or not Linux): the thread niceness above is what orders the children.
    }
  }
  const stdin = options.stdin === 'pipe' ? (subprocess.stdin ?? undefined) : undefined;
  const control = options.controlFd === undefined ? undefined : (subprocess.stdio[options.controlFd] as Writable | null | undefined) ?? undefined;
  for (const input of [stdin, control]) {
    input?.on('error', () => {
      // EPIPE/ECONNRESET when the child ends while data is written: its exit tells the story.
    });
  }
  return {
    pid: subprocess.pid,
    exited,
    stdin,
    niceError,
    control,
    stdoutPolled: polled !== undefined,
    signal(signal: NodeJS.Signals): boolean {
      return subprocess.kill(signal);
    },
  };
}

export interface RunResult {
  exitCode: number | undefined;
  stdout: string;
  stderr: string;
}

/**
 * Runs a short command to completion (a bounded helper such as gst-inspect-1.0). `stdinFile`: the
 * command reads this file on its stdin (opened here, so its path never reaches the argv).
 */
export async function runCommand(
  command: string,
  args: readonly string[],
  env: Readonly<Record<string, string>>,
  timeoutMs: number,
  options: { stdinFile?: string } = {},
): Promise<RunResult> {
  const result = await execa(command, [...args], {
    reject: false,
    stdin: options.stdinFile === undefined ? 'ignore' : { file: options.stdinFile },
    env,
    extendEnv: true,
    timeout: timeoutMs,
    maxBuffer: 1024 * 1024,
  });
  return {
    exitCode: result.exitCode,
    stdout: typeof result.stdout === 'string' ? result.stdout : '',
    stderr: typeof result.stderr === 'string' ? result.stderr : '',
  };
}

/**
 * Runs a command that turns bytes into bytes (a `gst-launch-1.0 fdsrc fd=0 ! ... ! fdsink fd=1`)
 * to completion, both ends streamed (decoded audio may be gigabytes): `input`'s chunks are
 * written to its stdin, which is then closed; `consume` reads its stdout (and rejects to fail the
 * run: a disk full). `stdout` in the result is always empty.
 */
export async function runFilter(
  command: string,
  args: readonly string[],
  env: Readonly<Record<string, string>>,
  timeoutMs: number,
  input: Iterable<Uint8Array> | AsyncIterable<Uint8Array>,
  consume: (stdout: Readable) => Promise<void>,
): Promise<RunResult> {
  const subprocess = execa(command, [...args], {
    reject: false,
    stdin: 'pipe',
    buffer: { stdout: false, stderr: true },
    env,
    extendEnv: true,
    timeout: timeoutMs,
    maxBuffer: 1024 * 1024,
  });
  const { stdin, stdout } = subprocess;
  if (stdin === null || stdout === null) throw new Error(`${command}: no pipes`);
  // EPIPE when the child ends before it has read everything: its exit code tells why.
  const feeding = pipeline(Readable.from(input), stdin).catch(() => undefined);
  const consuming = consume(stdout).then(
    () => undefined,
    (error: unknown) => {
      subprocess.kill('SIGKILL');
      return { error };
    },
  );
  const [result, , failed] = await Promise.all([subprocess, feeding, consuming]);
  if (failed !== undefined) throw failed.error;
  return {
    exitCode: result.exitCode,
    stdout: '',
    stderr: typeof result.stderr === 'string' ? result.stderr : '',
  };
}
