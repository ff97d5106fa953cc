/**
 * One pipeline's supervisor: keeps one gst-launch-1.0 child running while the engine wants it,
 * restarts it with back-off, keeps its recent output and explains its last failure.
 */
import type { Writable } from 'node:stream';
import type { Logger } from 'pino';
import type { ChildProcess, LaunchOptions } from './child.js';
import { backoffDelay, nextAttempt, type BackoffPolicy } from './backoff.js';
import { ControlChannel, ControlFailure, type Assignment } from './control-channel.js';
import { classifyExit } from './exit.js';
import { parseLine, type SrtAccessEvent } from '../stats/parse-line.js';
import { SrtCallerLog } from '../stats/srt-callers.js';
import { PipelineStats } from '../stats/pipeline-stats.js';
import { RingBuffer } from './ring-buffer.js';
import { MIN_CLEAN_RUN_MS, transition, type Action, type ChildEvent, type ChildState, type Desired } from './state.js';

export interface SupervisorDeps {
  launch: (options: LaunchOptions) => ChildProcess;
  command: string;
  env: Readonly<Record<string, string>>;
  log: Logger;
  backoff: BackoffPolicy;
  random: () => number;
  now: () => number;
  /** How long a stop waits after SIGINT (EOS) and then after SIGTERM before SIGKILL. */
  stopBounds: { eosMs: number; termMs: number };
  /** Lines of child output kept per pipeline. */
  logLines: number;
  /** Period of the child's statistics, ms. */
  statsIntervalMs: number;
  /** A running child that sends no statistics this long is stalled and restarted. */
  stallAfterMs: number;
}

/** What a station's supervisor adds to a pipeline's (all optional: a pipeline uses none). */
export interface SupervisorOptions {
  /** Each child gets a writable stdin (see `input()`); it is ended first when the child is stopped. */
  stdin?: boolean;
  /** Fields added to every log line (a station adds `station_id`). */
  logFields?: Readonly<Record<string, string>>;
  /** How log messages name the supervised thing (default `pipeline <id>`). */
  label?: string;
  /** Also record the supervisor's own events (child started, exited, state) in the output ring. */
  traceInLog?: boolean;
  /** Secrets each child reads from its descriptors 3, 4, ... (LaunchOptions.extraInput). */
  extraInput?: readonly Uint8Array[];
  /** Each child gets a control channel on this descriptor (LaunchOptions.controlFd; see `applyLive()`). */
  controlFd?: number;
  /** How long a control command waits for the child's answer before it is sent again once (default 1000 ms). */
  controlTimeoutMs?: number;
}

/** How a change reached the child: in the running child, or (none running) at its next start. */
export type LiveOutcome = 'live' | 'next-start';

export interface RuntimeInfo {
  state: ChildState;
  pid: number | null;
  restarts: number;
  last_error: string | null;
  exit_code: number | null;
  exit_signal: string | null;
  state_since: string;
  next_retry_at: string | null;
}

/** Lines gst-launch prints that mean the graph is up. */
const READY = /^Setting pipeline to PLAYING/;
/** Bus messages printed by `-m`: statistics, not log lines. */
const BUS_MESSAGE = /^Got message #\d+ /;

export class PipelineSupervisor {
  private state: ChildState = 'stopped';
  private desired: Desired = 'stop';
  private child: ChildProcess | undefined;
  private childStartedAt = 0;
  private attempt = 0;
  private restarts = 0;
  private lastError: string | null = null;
  private exitCode: number | null = null;
  private exitSignal: string | null = null;
  private stateSince: number;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryAt: number | null = null;
  private stopped: Promise<void> | undefined;
  private readonly output: RingBuffer<string>;
  private readonly recentStderr = new RingBuffer<string>(40);
  private readonly log: Logger;
  private watchdog: NodeJS.Timeout | undefined;
  /** Why the supervisor itself killed the child, to report instead of the signal. */
  private killReason: string | undefined;
  /** What the log says about SRT callers (kept across children: a refused caller retries). */
  private readonly callers = new SrtCallerLog();
  /** Statistics of the current child (a fresh object for every child). */
  stats: PipelineStats;

  private readonly label: string;
  /** The current child's control channel (with the `controlFd` option). */
  private control: ControlChannel | undefined;
  /** What the next child reads from descriptors 3, ... (reconfigure() replaces the option's). */
  private extraInput: readonly Uint8Array[] | undefined;

  constructor(
    readonly id: string,
    private args: readonly string[],
    private readonly deps: SupervisorDeps,
    private readonly options: SupervisorOptions = {},
  ) {
    this.stateSince = deps.now();
    this.output = new RingBuffer<string>(deps.logLines);
    this.log = deps.log.child({ pipeline_id: id, ...options.logFields });
    this.label = options.label ?? `pipeline ${id}`;
    this.stats = new PipelineStats(deps.statsIntervalMs);
    this.extraInput = options.extraInput;
  }

  /** The argv (and descriptors) of the next child; the running one is not touched. */
  reconfigure(args: readonly string[], extraInput: readonly Uint8Array[] | undefined): void {
    this.args = args;
    this.extraInput = extraInput;
  }

  /** Ends the child and starts a new one with the current argv (reconfigure()). */
  async restart(): Promise<void> {
    await this.stop();
    this.start();
  }

  /**
   * Sets properties in the running child through its control channel; resolves once the child
   * acknowledged them ('live'), or at once with 'next-start' when no child is starting or running
   * (the next one starts from the argv, which the caller updates). Rejects with ControlFailure.
   */
  async applyLive(assignments: readonly Assignment[]): Promise<LiveOutcome> {
    if (this.state !== 'starting' && this.state !== 'running') return 'next-start';
    const channel = this.control;
    const child = this.child;
    if (channel === undefined || child === undefined) return 'next-start';
    try {
      await channel.send(assignments);
    } catch (error) {
      // A child that never answered may still read the command later and run with values the
      // engine did not store: it is ended, and the next one starts from the stored argv.
      if (error instanceof ControlFailure && error.reason === 'timeout' && this.child === child) {
        this.killReason = 'did not answer a control command';
        this.log.warn({ event: 'control-timeout' }, `${this.label}: the child did not answer a control command; killing it`);
        child.signal('SIGKILL');
      }
      throw error;
    }
    return 'live';
  }

  start(): void {
    this.desired = 'run';
    this.dispatch({ type: 'spawn' });
  }

  /** Ends the child (EOS, then SIGTERM, then SIGKILL after bounds); resolves once it is gone. */
  stop(): Promise<void> {
    this.desired = 'stop';
    if (this.stopped !== undefined) return this.stopped;
    const child = this.child;
    this.dispatch({ type: 'stop' });
    if (child === undefined) return Promise.resolve();
    this.stopped = this.endChild(child).finally(() => {
      this.stopped = undefined;
    });
    return this.stopped;
  }

  snapshot(): RuntimeInfo {
    return {
      state: this.state,
      pid: this.child?.pid ?? null,
      restarts: this.restarts,
      last_error: this.lastError,
      exit_code: this.exitCode,
      exit_signal: this.exitSignal,
      state_since: new Date(this.stateSince).toISOString(),
      next_retry_at: this.retryAt === null ? null : new Date(this.retryAt).toISOString(),
    };
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The last `n` lines of the child's output (stderr and gst-launch's own lines). */
  logs(n: number): string[] {
    return this.output.last(n);
  }

  /** The current child's stdin (only with the `stdin` option), while the child is starting or running. */
  input(): Writable | undefined {
    if (this.state !== 'starting' && this.state !== 'running') return undefined;
    return this.child?.stdin;
  }

  /** Adds an engine line to the output ring (with the `traceInLog` option: a station's own events). */
  note(text: string): void {
    if (this.options.traceInLog === true) this.output.push(`${new Date(this.deps.now()).toISOString()} engine: ${text}`);
  }

  private setState(next: ChildState): void {
    if (next === this.state) return;
    this.log.info({ event: 'state', from: this.state, to: next }, `${this.label}: ${this.state} -> ${next}`);
    this.note(`state ${this.state} -> ${next}`);
    this.state = next;
    this.stateSince = this.deps.now();
  }

  private dispatch(event: ChildEvent): void {
    const { state, action } = transition(this.state, this.desired, event);
    this.setState(state);
    this.act(action);
  }

  private act(action: Action): void {
    switch (action.do) {
      case 'none':
      case 'signal-stop': // the caller of stop() ends the child
        return;
      case 'spawn':
        if (this.state !== 'starting') this.setState('starting');
        this.spawn();
        return;
      case 'schedule-retry': {
        const delay = backoffDelay(this.deps.backoff, this.attempt, this.deps.random);
        this.retryAt = this.deps.now() + delay;
        this.log.warn({ event: 'retry', delay_ms: delay, attempt: this.attempt }, `${this.label}: restart in ${delay} ms`);
        this.retryTimer = setTimeout(() => {
          this.retryTimer = undefined;
          this.retryAt = null;
          this.dispatch({ type: 'retry-due' });
        }, delay);
        return;
      }
      case 'cancel-retry':
        if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
        this.retryTimer = undefined;
        this.retryAt = null;
        return;
      default: {
        const unknown: never = action;
        throw new Error(`unknown action ${JSON.stringify(unknown)}`);
      }
    }
  }

  private spawn(): void {
    this.childStartedAt = this.deps.now();
    this.recentStderr.clear(); // the exit of this run is judged on this run's output only
    this.killReason = undefined;
    const stats = new PipelineStats(this.deps.statsIntervalMs);
    this.stats = stats;
    const child = this.deps.launch({
      command: this.deps.command,
      args: this.args,
      env: this.deps.env,
      stdin: this.options.stdin === true ? 'pipe' : 'ignore',
      extraInput: this.extraInput,
      controlFd: this.options.controlFd,
      onStdoutLine: (line) => {
        if (BUS_MESSAGE.test(line)) {
          const event = parseLine(line);
          if (event?.kind === 'srtaccess') this.reportCaller(event);
          if (event?.kind === 'enginecontrol' && this.child === child) this.control?.onAck(event);
          if (event !== undefined) stats.apply(event, this.deps.now());
          return;
        }
        this.output.push(line);
        if (READY.test(line) && this.child === child) this.dispatch({ type: 'ready' });
      },
      onStderrLine: (line) => {
        this.output.push(line);
        this.recentStderr.push(line);
        // While stopping, an idle graph's complaints about an early EOS are expected, not warnings.
        if (line.trim() !== '') this.log[this.state === 'stopping' ? 'info' : 'warn']({ stream: 'stderr' }, line);
      },
    });
    this.child = child;
    this.control?.close();
    this.control = child.control === undefined ? undefined : new ControlChannel(child.control, this.options.controlTimeoutMs ?? 1000);
    this.startWatchdog(child, stats);
    this.log.info({ event: 'spawn', pid: child.pid, restarts: this.restarts }, `${this.label}: child started`);
    this.note(`child started (pid ${String(child.pid)})`);
    void child.exited.then((exit) => this.onExit(child, exit.exitCode, exit.signal, exit.spawnError));
  }

  /** An SRT caller accepted or refused (by libsrt: wrong or missing passphrase): the log and the output ring. */
  private reportCaller(event: SrtAccessEvent): void {
    const line = this.callers.report(event, this.deps.now());
    if (line === undefined) return;
    this.log[line.level](line.fields, `${this.label}: ${line.text}`);
    this.output.push(`${new Date(this.deps.now()).toISOString()} engine: ${line.text}`);
  }

  /**
   * Only real progress (a statistics message, which the child posts every interval whether or not
   * audio flows) counts: a child that is stopped, deadlocked or busy-looping is killed and restarted.
   */
  private startWatchdog(child: ChildProcess, stats: PipelineStats): void {
    this.stopWatchdog();
    const period = Math.max(100, Math.min(this.deps.statsIntervalMs, 1000));
    this.watchdog = setInterval(() => {
      if (this.child !== child || this.state !== 'running') return;
      const since = stats.lastProgressAt ?? this.stateSince;
      const silentMs = this.deps.now() - since;
      if (silentMs < this.deps.stallAfterMs) return;
      this.killReason = `stalled: no statistics from the child for ${(silentMs / 1000).toFixed(1)} s`;
      this.log.warn({ event: 'stalled', silent_ms: silentMs }, `${this.label}: ${this.killReason}; killing it`);
      this.stopWatchdog();
      child.signal('SIGKILL');
    }, period);
    this.watchdog.unref();
  }

  private stopWatchdog(): void {
    if (this.watchdog !== undefined) clearInterval(this.watchdog);
    this.watchdog = undefined;
  }

  private onExit(child: ChildProcess, exitCode: number | undefined, signal: string | undefined, spawnError: string | undefined): void {
    if (this.child !== child) return;
    this.child = undefined;
    this.control?.close();
    this.control = undefined;
    this.stopWatchdog();
    const ranMs = this.deps.now() - this.childStartedAt;
    const stderr = this.recentStderr.last();
    const cls = spawnError !== undefined
      ? { kind: 'retry' as const, reason: `cannot start ${this.deps.command}: ${spawnError}` }
      : this.killReason !== undefined
        ? { kind: 'retry' as const, reason: this.killReason }
        : classifyExit({ exitCode, signal, stderr });
    this.exitCode = exitCode ?? null;
    this.exitSignal = signal ?? null;
    const wanted = this.desired === 'run';
    const instantEnd = cls.kind === 'clean' && ranMs < MIN_CLEAN_RUN_MS;
    if (wanted && cls.kind !== 'clean') this.lastError = cls.reason;
    if (wanted && instantEnd) this.lastError = `the stream ended ${ranMs} ms after the child started`;
    this.log[wanted && cls.kind !== 'clean' ? 'warn' : 'info'](
      { event: 'exit', exit_code: exitCode ?? null, signal: signal ?? null, ran_ms: ranMs, class: wanted ? cls.kind : 'stopped' },
      `${this.label}: child exited (${signal ?? `code ${String(exitCode)}`})${!wanted || cls.kind === 'clean' ? '' : `: ${cls.reason}`}`,
    );
    this.note(`child exited (${signal ?? `code ${String(exitCode)}`})${wanted && cls.kind !== 'clean' ? `: ${cls.reason}` : ''}`);
    if (wanted) {
      this.attempt = cls.kind === 'clean' && !instantEnd ? 0 : nextAttempt(this.deps.backoff, this.attempt, ranMs);
      if (cls.kind !== 'permanent') this.restarts += 1;
    }
    this.dispatch({ type: 'exit', class: cls, ranMs });
  }

  private async endChild(child: ChildProcess): Promise<void> {
    const gone = child.exited.then(() => true);
    const within = (ms: number): Promise<boolean> =>
      Promise.race([gone, new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref())]);
    child.stdin?.end(); // a stdin-fed graph ends at once (a graph still waiting for data ignores SIGINT's EOS)
    child.signal('SIGINT'); // gst-launch -e: EOS through the graph, then exit 0
    if (await within(this.deps.stopBounds.eosMs)) return;
    this.log.warn({ event: 'stop-escalate', signal: 'SIGTERM' }, `${this.label}: no EOS in time, sending SIGTERM`);
    child.signal('SIGTERM');
    if (await within(this.deps.stopBounds.termMs)) return;
    this.log.warn({ event: 'stop-escalate', signal: 'SIGKILL' }, `${this.label}: still running, sending SIGKILL`);
    child.signal('SIGKILL');
    await gone;
  }
}
