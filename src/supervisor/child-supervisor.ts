/**
 * One supervised process: keeps one gst-launch-1.0 child running while its owner wants it,
 * restarts it with back-off, kills one that does not start, stalls or hangs, ends it (EOS, then
 * SIGTERM, then SIGKILL), keeps its recent output and explains its last failure. It knows children,
 * not pipelines: each bus message a child prints is parsed once (stats/parse-line.ts) and handed
 * to the owner's observer (ChildObserver; a pipeline's is pipelines/child-reports.ts), which also
 * tells it whether a child made progress and passed audio.
 */
import type { Writable } from 'node:stream';
import type { Logger } from 'pino';
import type { ChildProcess, LaunchOptions } from '../process/child.js';
import { backoffDelay, nextAttempt, type BackoffPolicy } from './backoff.js';
import { ControlChannel, ControlFailure, type Assignment } from './control-channel.js';
import { classifyExit, PREROLL_FAILED, type SupervisorKill } from './exit.js';
import { parseLine, type StatsEvent } from '../stats/parse-line.js';
import { RingBuffer } from './ring-buffer.js';
import { REAL_TIMERS, type Timer, type Timers } from './timers.js';
import { watchdogVerdict } from './watchdog.js';
import { MIN_CLEAN_RUN_MS, transition, type Action, type ChildEvent, type ChildState, type Desired } from './state.js';

/**
 * What the owner of a supervisor makes of its children's reports. The supervisor calls it for
 * the current child only: `childStarted`, then each bus message (`report`), then `childEnded`.
 */
export interface ChildObserver {
  /** A new child starts: nothing of it is known yet. */
  childStarted(): void;
  /** One bus message of the current child, parsed once (the control channel's answers are the supervisor's own). */
  report(event: StatsEvent, now: number): void;
  /** A text line of the child's stdout the observer drops from the output ring (a message it reads as a bus message instead). */
  swallows?(line: string): boolean;
  /** The current child has exited. */
  childEnded(): void;
  /** When the current child last made real progress (a statistics message): what the watchdog judges. */
  lastProgressAt(): number | undefined;
  /** Whether the current (or just ended) child passed audio: a child that did not is judged as a source that sent nothing. */
  passedAudio(): boolean;
}

/** The plan of the next child: its argv and what it reads from its descriptors 3, 4, ... */
export interface ChildPlan {
  argv: readonly string[];
  /** Secrets each child reads from its descriptors 3, 4, ... (LaunchOptions.extraInput). */
  extraInput?: readonly (Uint8Array | null)[];
}

export interface SupervisorDeps {
  launch: (options: LaunchOptions) => ChildProcess;
  command: string;
  env: Readonly<Record<string, string>>;
  log: Logger;
  backoff: BackoffPolicy;
  random: () => number;
  now: () => number;
  /** The timers of back-off, start deadlines, the watchdog and stop escalation (default REAL_TIMERS; a test's clock). */
  timers?: Timers;
  /** How long a stop waits after SIGINT (EOS) and then after SIGTERM before SIGKILL. */
  stopBounds: { eosMs: number; termMs: number };
  /** Lines of child output kept per pipeline. */
  logLines: number;
  /** Period of the child's statistics, ms. */
  statsIntervalMs: number;
  /** A running child that sends no statistics this long is stalled and restarted. */
  stallAfterMs: number;
  /** While the host is overloaded a slow child is not stalled: the bound is OVERLOAD_STALL_FACTOR (watchdog.ts) times longer. */
  hostOverloaded?: () => boolean;
  /**
   * A child that has not reached PLAYING this long after it started is killed and restarted (a
   * stdin child: twice this long after a source took its input; see inputTaken).
   */
  readyTimeoutMs: number;
  /** After gst-launch says the pipeline would not preroll, how long it may take to exit before it is killed. */
  prerollExitMs: number;
}

/** How a supervisor runs its children (all optional). */
export interface SupervisorOptions {
  /** Each child gets a writable stdin (see `input()`); it is ended first when the child is stopped. */
  stdin?: boolean;
  /** Fields added to every log line (a station adds `station_id`). */
  logFields?: Readonly<Record<string, string>>;
  /** How log messages name the supervised thing (default `pipeline <id>`). */
  label?: string;
  /** Also record the supervisor's own events (child started, exited, state) in the output ring. */
  traceInLog?: boolean;
  /** Niceness added to each child (a normal-priority pipeline's; capacity/model.ts). */
  niceIncrement?: number;
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

export class ChildSupervisor {
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
  private retryTimer: Timer | undefined;
  private retryAt: number | null = null;
  private stopped: Promise<void> | undefined;
  private readonly output: RingBuffer<string>;
  private readonly recentStderr = new RingBuffer<string>(40);
  private readonly log: Logger;
  private watchdog: Timer | undefined;
  /** Kills a child that does not reach PLAYING in time (or hangs after a preroll failure). */
  private readyTimer: Timer | undefined;
  /** Why the supervisor itself killed the child, to report instead of the signal. */
  private killedBy: SupervisorKill | undefined;

  private readonly label: string;
  /** The current child's control channel (with the `controlFd` option). */
  private control: ControlChannel | undefined;
  /** What the next child's owner observes of it. */
  private observer: ChildObserver | undefined;

  constructor(
    readonly id: string,
    /** The argv and secrets of the next child (reconfigure() replaces it; the running child is not touched). */
    private plan: ChildPlan,
    private readonly deps: SupervisorDeps,
    private readonly options: SupervisorOptions = {},
  ) {
    this.stateSince = deps.now();
    this.output = new RingBuffer<string>(deps.logLines);
    this.log = deps.log.child({ pipeline_id: id, ...options.logFields });
    this.label = options.label ?? `pipeline ${id}`;
  }

  /** The owner's observer of every child from the next one on (pipelines/child-reports.ts); set once, before start. */
  observe(observer: ChildObserver): void {
    this.observer = observer;
  }

  /** The argv and secrets of the next child; the running one is not touched. */
  reconfigure(plan: ChildPlan): void {
    this.plan = plan;
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
        this.killedBy = { cause: 'control-timeout' };
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

  /** Wanted, but the first child waits for start() (state `pending`): the engine is not ready for children yet. */
  hold(): void {
    this.desired = 'run';
    this.dispatch({ type: 'hold' });
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

  /**
   * A source took the current child's stdin. A stdin graph prerolls only once data comes, so its
   * start deadline runs from here (again for every source), twice the usual: the harbor owns the
   * judgment of a source (nothing for 10 s, audio not playing 10 s after the connection, or not
   * 3 s after the source left: the source is ended and the child returned or replaced, with no
   * failure); this deadline is only the backstop behind those bounds.
   */
  inputTaken(input: Writable): void {
    const child = this.child;
    if (child === undefined || child.stdin !== input || this.state !== 'starting') return;
    const deadline = 2 * this.deps.readyTimeoutMs;
    this.armReadyTimer(child, deadline, { cause: 'not-playing', afterMs: deadline });
  }

  /** The source gave the stdin back without writing a byte: the child waits for the next source, with no deadline. */
  inputReturned(input: Writable): void {
    if (this.child?.stdin === input && this.state === 'starting') this.stopReadyTimer();
  }

  private get timers(): Timers {
    return this.deps.timers ?? REAL_TIMERS;
  }

  /** Adds an engine line to the output ring (with the `traceInLog` option: a station's own events). */
  note(text: string): void {
    if (this.options.traceInLog === true) this.record(text);
  }

  /** Adds an engine line to the output ring whatever the options (what an operator reading the child's log must see). */
  record(text: string): void {
    this.output.push(`${new Date(this.deps.now()).toISOString()} engine: ${text}`);
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
      case 'schedule-restart':
        this.retryAt = this.deps.now() + action.afterMs;
        this.log.info({ event: 'restart-soon', delay_ms: action.afterMs }, `${this.label}: the source sent no audio; next child in ${action.afterMs} ms`);
        this.retryTimer = this.timers.after(action.afterMs, () => {
          this.retryTimer = undefined;
          this.retryAt = null;
          this.dispatch({ type: 'retry-due' });
        });
        return;
      case 'schedule-retry': {
        const delay = backoffDelay(this.deps.backoff, this.attempt, this.deps.random);
        this.retryAt = this.deps.now() + delay;
        this.log.warn({ event: 'retry', delay_ms: delay, attempt: this.attempt }, `${this.label}: restart in ${delay} ms`);
        this.retryTimer = this.timers.after(delay, () => {
          this.retryTimer = undefined;
          this.retryAt = null;
          this.dispatch({ type: 'retry-due' });
        });
        return;
      }
      case 'cancel-retry':
        this.retryTimer?.cancel();
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
    this.retryTimer?.cancel();
    this.retryTimer = undefined;
    this.retryAt = null;
    this.childStartedAt = this.deps.now();
    this.recentStderr.clear(); // the exit of this run is judged on this run's output only
    this.killedBy = undefined;
    const observer = this.observer;
    observer?.childStarted();
    const child = this.deps.launch({
      command: this.deps.command,
      args: this.plan.argv,
      env: this.deps.env,
      stdin: this.options.stdin === true ? 'pipe' : 'ignore',
      extraInput: this.plan.extraInput,
      niceIncrement: this.options.niceIncrement ?? 0,
      controlFd: this.options.controlFd,
      onStdoutLine: (line) => {
        if (BUS_MESSAGE.test(line)) {
          const event = parseLine(line);
          if (event === undefined || this.child !== child) return;
          if (event.kind === 'enginecontrol') this.control?.onAck(event);
          else observer?.report(event, this.deps.now());
          return;
        }
        if (observer?.swallows?.(line) === true) return;
        this.output.push(line);
        if (READY.test(line) && this.child === child) {
          this.stopReadyTimer();
          this.dispatch({ type: 'ready' });
        }
      },
      onStderrLine: (line) => {
        this.output.push(line);
        this.recentStderr.push(line);
        // gst-launch 1.22 can hang after this line instead of exiting (seen with a stdin graph whose
        // source sent nothing): give it a moment to exit, then kill it.
        if (PREROLL_FAILED.test(line) && this.child === child && this.state === 'starting') {
          this.armReadyTimer(child, this.deps.prerollExitMs, { cause: 'preroll-hang' });
        }
        // While stopping, an idle graph's complaints about an early EOS are expected, not warnings.
        if (line.trim() !== '') this.log[this.state === 'stopping' ? 'info' : 'warn']({ stream: 'stderr' }, line);
      },
    });
    this.child = child;
    if (child.niceError !== undefined) this.log.warn({ event: 'nice-failed' }, `${this.label}: priority not applied: ${child.niceError}`);
    this.control?.close();
    this.control = child.control === undefined ? undefined : new ControlChannel(child.control, this.options.controlTimeoutMs ?? 1000);
    this.startWatchdog(child);
    if (this.options.stdin !== true) this.armReadyTimer(child, this.deps.readyTimeoutMs, { cause: 'not-playing', afterMs: this.deps.readyTimeoutMs });
    this.log.info({ event: 'spawn', pid: child.pid, restarts: this.restarts, stdout_polled: child.stdoutPolled }, `${this.label}: child started`);
    this.note(`child started (pid ${String(child.pid)})`);
    void child.exited.then((exit) => this.onExit(child, exit.exitCode, exit.signal, exit.spawnError));
  }

  /**
   * Only real progress (a statistics message, which the child posts every interval whether or not
   * audio flows) counts: a child that is stopped, deadlocked or busy-looping is killed and restarted.
   */
  private startWatchdog(child: ChildProcess): void {
    this.stopWatchdog();
    const period = Math.max(100, Math.min(this.deps.statsIntervalMs, 1000));
    let previousTick = this.deps.now();
    this.watchdog = this.timers.every(period, () => {
      const now = this.deps.now();
      const verdict = watchdogVerdict({
        now,
        previousTick,
        periodMs: period,
        lastProgressAt: this.observer?.lastProgressAt() ?? this.stateSince,
        stallAfterMs: this.deps.stallAfterMs,
        hostOverloaded: this.deps.hostOverloaded?.() === true,
      });
      previousTick = now;
      if (this.child !== child || this.state !== 'running' || verdict.kind !== 'stalled') return;
      const silentMs = verdict.silentMs;
      this.killedBy = { cause: 'stalled', silentMs };
      this.log.warn({ event: 'stalled', silent_ms: silentMs }, `${this.label}: no statistics from the child for ${(silentMs / 1000).toFixed(1)} s; killing it`);
      this.stopWatchdog();
      child.signal('SIGKILL');
    });
  }

  /** Kills `child` after `ms` unless it reaches PLAYING (or exits) first. */
  private armReadyTimer(child: ChildProcess, ms: number, kill: SupervisorKill): void {
    this.stopReadyTimer();
    this.readyTimer = this.timers.after(ms, () => {
      this.readyTimer = undefined;
      if (this.child !== child || this.state !== 'starting') return;
      this.killedBy = kill;
      this.log.warn({ event: 'start-timeout', cause: kill.cause, after_ms: ms }, `${this.label}: not PLAYING ${ms} ms after ${kill.cause === 'preroll-hang' ? 'the preroll failure' : 'start'}; killing the child`);
      child.signal('SIGKILL');
    });
  }

  private stopReadyTimer(): void {
    this.readyTimer?.cancel();
    this.readyTimer = undefined;
  }

  private stopWatchdog(): void {
    this.watchdog?.cancel();
    this.watchdog = undefined;
  }

  private onExit(child: ChildProcess, exitCode: number | undefined, signal: string | undefined, spawnError: string | undefined): void {
    if (this.child !== child) return;
    this.child = undefined;
    this.control?.close();
    this.control = undefined;
    this.stopWatchdog();
    this.stopReadyTimer();
    const ranMs = this.deps.now() - this.childStartedAt;
    const stderr = this.recentStderr.last();
    const audioSeen = this.observer?.passedAudio() ?? false;
    this.observer?.childEnded();
    const cls = spawnError !== undefined
      ? { kind: 'retry' as const, reason: `cannot start ${this.deps.command}: ${spawnError}` }
      : classifyExit({ exitCode, signal, stderr, audioSeen, ...(this.killedBy === undefined ? {} : { killedBy: this.killedBy }) });
    this.exitCode = exitCode ?? null;
    this.exitSignal = signal ?? null;
    const wanted = this.desired === 'run';
    const instantEnd = cls.kind === 'clean' && ranMs < MIN_CLEAN_RUN_MS;
    const failure = cls.kind === 'permanent' || cls.kind === 'retry';
    if (wanted && cls.kind !== 'clean') this.lastError = cls.reason;
    if (wanted && instantEnd) this.lastError = `the stream ended ${ranMs} ms after the child started`;
    this.log[wanted && failure ? 'warn' : 'info'](
      { event: 'exit', exit_code: exitCode ?? null, signal: signal ?? null, ran_ms: ranMs, class: wanted ? cls.kind : 'stopped' },
      `${this.label}: child exited (${signal ?? `code ${String(exitCode)}`})${!wanted || cls.kind === 'clean' ? '' : `: ${cls.reason}`}`,
    );
    this.note(`child exited (${signal ?? `code ${String(exitCode)}`})${wanted && cls.kind !== 'clean' ? `: ${cls.reason}` : ''}`);
    if (wanted) {
      // A source that sent nothing neither grows nor forgets the back-off.
      if (cls.kind !== 'no-data') this.attempt = cls.kind === 'clean' && !instantEnd ? 0 : nextAttempt(this.deps.backoff, this.attempt, ranMs);
      if (cls.kind !== 'permanent') this.restarts += 1;
    }
    this.dispatch({ type: 'exit', class: cls, ranMs });
  }

  private async endChild(child: ChildProcess): Promise<void> {
    const gone = child.exited.then(() => true);
    const within = (ms: number): Promise<boolean> =>
      Promise.race([gone, new Promise<boolean>((resolve) => this.timers.after(ms, () => resolve(false)))]);
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
