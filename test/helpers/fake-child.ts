/**
 * Children for the supervisor without processes: each launch gives a FakeChild that prints what
 * the test tells it (lines captured from real gst-launch-1.0 1.22 runs, test/fixtures/
 * gst-launch-1.22/), exits as a real one would (SIGINT: EOS and exit 0, as `gst-launch -e`;
 * SIGTERM and SIGKILL: killed by that signal), and records the signals and control commands it
 * got. With a FakeClock (fake-clock.ts), supervision runs in milliseconds.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { ChildExit, ChildProcess, LaunchOptions } from '../../src/process/child.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/gst-launch-1.22');

/** A captured run: its stdout and stderr lines and its exit code (absent files: none). */
export interface CapturedRun {
  stdout: string[];
  stderr: string[];
  code: number | undefined;
}

export function capturedRun(name: string): CapturedRun {
  const read = (ext: string): string | undefined => {
    try {
      return readFileSync(path.join(FIXTURES, `${name}.${ext}`), 'utf8');
    } catch {
      return undefined;
    }
  };
  const lines = (text: string | undefined): string[] => (text === undefined ? [] : text.split('\n').filter((l, i, all) => l !== '' || i < all.length - 1));
  const code = read('code');
  return { stdout: lines(read('stdout')), stderr: lines(read('stderr')), code: code === undefined ? undefined : Number(code.trim()) };
}

/** How a child answers the signals it gets. */
export interface SignalBehaviour {
  /** SIGINT ends it with code 0 (gst-launch -e after EOS); false: ignored (a hung child). Default true. */
  endsOnSigint?: boolean;
  /** SIGTERM kills it; false: ignored. Default true. SIGKILL always kills. */
  endsOnSigterm?: boolean;
}

let nextPid = 900_000;

export class FakeChild implements ChildProcess {
  readonly pid = nextPid++;
  readonly stdin = undefined;
  readonly control: PassThrough | undefined;
  readonly stdoutPolled = false;
  readonly exited: Promise<ChildExit>;
  /** Every signal it was sent, in order. */
  readonly signals: NodeJS.Signals[] = [];
  /** The lines the engine wrote on its control channel. */
  readonly commands: string[] = [];
  private ended = false;
  private resolveExit!: (exit: ChildExit) => void;

  constructor(
    readonly options: LaunchOptions,
    private readonly behaviour: SignalBehaviour = {},
  ) {
    this.exited = new Promise((resolve) => {
      this.resolveExit = resolve;
    });
    this.control = options.controlFd === undefined ? undefined : new PassThrough();
    this.control?.on('data', (chunk: Buffer) => this.commands.push(...chunk.toString('utf8').split('\n').filter((l) => l !== '')));
  }

  get alive(): boolean {
    return !this.ended;
  }

  /** Lines on stdout, each as the engine reads it. */
  print(lines: readonly string[]): void {
    if (this.ended) throw new Error(`fake child ${this.pid} has exited`);
    for (const line of lines) this.options.onStdoutLine(line);
  }

  /** Lines on stderr. */
  printError(lines: readonly string[]): void {
    if (this.ended) throw new Error(`fake child ${this.pid} has exited`);
    for (const line of lines) this.options.onStderrLine(line);
  }

  /** Ends the child with an exit code or a signal. */
  exit(exit: { code?: number; signal?: NodeJS.Signals }): void {
    if (this.ended) return;
    this.ended = true;
    this.control?.end();
    this.resolveExit({ exitCode: exit.signal === undefined ? exit.code : undefined, signal: exit.signal, spawnError: undefined });
  }

  /** Prints a captured run's stdout and stderr, then exits with its code (when it has one). */
  replayRun(run: CapturedRun): void {
    this.print(run.stdout);
    this.printError(run.stderr);
    // 137 and 143: the capturing shell's report of a child killed by SIGKILL or SIGTERM
    if (run.code !== undefined) this.exit(run.code === 137 ? { signal: 'SIGKILL' } : run.code === 143 ? { signal: 'SIGTERM' } : { code: run.code });
  }

  signal(signal: NodeJS.Signals): boolean {
    if (this.ended) return false;
    this.signals.push(signal);
    if (signal === 'SIGKILL') this.exit({ signal });
    else if (signal === 'SIGTERM' && this.behaviour.endsOnSigterm !== false) this.exit({ signal });
    else if (signal === 'SIGINT' && this.behaviour.endsOnSigint !== false) this.exit({ code: 0 });
    return true;
  }
}

/** The supervisor's `launch`: a FakeChild for each start, kept in order. */
export class FakeLauncher {
  readonly children: FakeChild[] = [];
  /** How the next children answer signals. */
  behaviour: SignalBehaviour = {};

  launch = (options: LaunchOptions): FakeChild => {
    const child = new FakeChild(options, this.behaviour);
    this.children.push(child);
    return child;
  };

  /** The newest child (throws when none was started). */
  get current(): FakeChild {
    const child = this.children.at(-1);
    if (child === undefined) throw new Error('no child was started');
    return child;
  }
}
