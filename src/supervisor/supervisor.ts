/**
 * One pipeline's supervisor: keeps one gst-launch-1.0 child running while the engine wants it,
 * restarts it with back-off, keeps its recent output and explains its last failure.
 */
import type { Writable } from 'node:stream';
import type { Logger } from 'pino';
import type { ChildProcess, LaunchOptions } from '../process/child.js';
import { backoffDelay, nextAttempt, type BackoffPolicy } from './backoff.js';
import { ControlChannel, ControlFailure, type Assignment } from './control-channel.js';
import { classifyExit, PREROLL_FAILED, type SupervisorKill } from './exit.js';
import { parseLine, type ClockBridgeEvent, type FailoverEvent, type SrtAccessEvent } from '../stats/parse-line.js';
import { describeUnderrun, underrunBetween } from '../stats/underruns.js';
import { depthBetween, describeDepth } from '../stats/depth.js';
import { describeFailover, failoverReport } from '../stats/failovers.js';
import { SrtCallerLog } from '../stats/srt-callers.js';
import { PipelineStats } from '../stats/pipeline-stats.js';
import { OutputLegs, SendWarningLines, type LegChange } from '../stats/output-legs.js';
import { RingBuffer } from './ring-buffer.js';
import { watchdogVerdict } from './watchdog.js';
import { legOfSink, statsLayoutOf, type LegInterface } from '../compiler/compile.js';
import type { LinkWatch } from '../net/link-watcher.js';
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
  /** While the host is overloaded a slow child is not stalled: the bound is OVERLOAD_STALL_FACTOR (watchdog.ts) times longer. */
  hostOverloaded?: () => boolean;
  /**
   * A child that has not reached PLAYING this long after it started is killed and restarted (a
   * stdin child: twice this long after a source took its input; see inputTaken).
   */
  readyTimeoutMs: number;
  /** After gst-launch says the pipeline would not preroll, how long it may take to exit before it is killed. */
  prerollExitMs: number;
  /** The engine's link watcher: while a child runs, the links of its legs' interfaces (option legInterfaces) are watched. */
  links?: LinkWatch;
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
  extraInput?: readonly (Uint8Array | null)[];
  /** Niceness added to each child (a normal-priority pipeline's; capacity/model.ts). */
  niceIncrement?: number;
  /** Each child gets a control channel on this descriptor (LaunchOptions.controlFd; see `applyLive()`). */
  controlFd?: number;
  /** How long a control command waits for the child's answer before it is sent again once (default 1000 ms). */
  controlTimeoutMs?: number;
  /** The output legs that send from a named interface: their links are watched while a child runs (deps.links). */
  legInterfaces?: readonly LegInterface[];
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
  /** The current child's last clock bridge report (underruns are logged against it). */
  private lastBridge: ClockBridgeEvent | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryAt: number | null = null;
  private stopped: Promise<void> | undefined;
  private readonly output: RingBuffer<string>;
  private readonly recentStderr = new RingBuffer<string>(40);
  private readonly log: Logger;
  private watchdog: NodeJS.Timeout | undefined;
  /** Kills a child that does not reach PLAYING in time (or hangs after a preroll failure). */
  private readyTimer: NodeJS.Timeout | undefined;
  /** Why the supervisor itself killed the child, to report instead of the signal. */
  private killedBy: SupervisorKill | undefined;
  /** What the log says about SRT callers (kept across children: a refused caller retries). */
  private readonly callers = new SrtCallerLog();
  /** Statistics of the pipeline: one object for its whole life, counters summed over its children. */
  readonly stats: PipelineStats;
  /** The current child's output legs (its udpsinks): sending or failed (stats/output-legs.ts). */
  readonly legs = new OutputLegs();
  /** Drops the text lines of udpsink's send warnings (their bus messages are parsed). */
  private warningLines = new SendWarningLines();

  private readonly label: string;
  /** The current child's control channel (with the `controlFd` option). */
  private control: ControlChannel | undefined;
  /** What the next child reads from descriptors 3, ... (reconfigure() replaces the option's). */
  private extraInput: readonly (Uint8Array | null)[] | undefined;
  /** The legs' interfaces of the next child (reconfigure() replaces the option's). */
  private legInterfaces: readonly LegInterface[];
  /** Ends the current child's watches of its legs' links. */
  private unwatchLinks: (() => void) | undefined;

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
    this.stats = new PipelineStats(deps.statsIntervalMs, statsLayoutOf(args));
    this.extraInput = options.extraInput;
    this.legInterfaces = options.legInterfaces ?? [];
  }

  /** The argv (descriptors, legs' interfaces) of the next child; the running one is not touched. */
  reconfigure(args: readonly string[], extraInput: readonly (Uint8Array | null)[] | undefined, legInterfaces: readonly LegInterface[] = []): void {
    this.args = args;
    this.extraInput = extraInput;
    this.legInterfaces = legInterfaces;
    // the series a changed graph reports (a loudness step added or removed) exist from the change on
    this.stats.layout = statsLayoutOf(args);
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
      case 'schedule-restart':
        this.retryAt = this.deps.now() + action.afterMs;
        this.log.info({ event: 'restart-soon', delay_ms: action.afterMs }, `${this.label}: the source sent no audio; next child in ${action.afterMs} ms`);
        this.retryTimer = setTimeout(() => {
          this.retryTimer = undefined;
          this.retryAt = null;
          this.dispatch({ type: 'retry-due' });
        }, action.afterMs);
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
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.retryAt = null;
    this.childStartedAt = this.deps.now();
    this.recentStderr.clear(); // the exit of this run is judged on this run's output only
    this.killedBy = undefined;
    const stats = this.stats;
    stats.childStarted();
    this.lastBridge = undefined; // a new child counts from 0
    this.legs.childStarted();
    this.warningLines = new SendWarningLines();
    const child = this.deps.launch({
      command: this.deps.command,
      args: this.args,
      env: this.deps.env,
      stdin: this.options.stdin === true ? 'pipe' : 'ignore',
      extraInput: this.extraInput,
      niceIncrement: this.options.niceIncrement ?? 0,
      controlFd: this.options.controlFd,
      onStdoutLine: (line) => {
        if (BUS_MESSAGE.test(line)) {
          const event = parseLine(line);
          if (event?.kind === 'srtaccess') this.reportCaller(event);
          if (event?.kind === 'enginecontrol' && this.child === child) this.control?.onAck(event);
          if (event?.kind === 'clockbridge' && this.child === child) this.reportUnderruns(event);
          if (event?.kind === 'udp-send-warning' && this.child === child) this.reportLeg(this.legs.onWarning(event));
          if (event?.kind === 'pipelinestats' && this.child === child) for (const change of this.legs.onReport(event.output?.packets)) this.reportLeg(change);
          if (event?.kind === 'failover' && this.child === child) this.reportFailover(event);
          if (event !== undefined) stats.apply(event, this.deps.now());
          return;
        }
        if (this.warningLines.swallow(line)) return;
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
    this.watchLinks(child);
    if (child.niceError !== undefined) this.log.warn({ event: 'nice-failed' }, `${this.label}: priority not applied: ${child.niceError}`);
    this.control?.close();
    this.control = child.control === undefined ? undefined : new ControlChannel(child.control, this.options.controlTimeoutMs ?? 1000);
    this.startWatchdog(child, stats);
    if (this.options.stdin !== true) this.armReadyTimer(child, this.deps.readyTimeoutMs, { cause: 'not-playing', afterMs: this.deps.readyTimeoutMs });
    this.log.info({ event: 'spawn', pid: child.pid, restarts: this.restarts, stdout_polled: child.stdoutPolled }, `${this.label}: child started`);
    this.note(`child started (pid ${String(child.pid)})`);
    void child.exited.then((exit) => this.onExit(child, exit.exitCode, exit.signal, exit.spawnError));
  }

  /** Underruns of the clock bridge since its previous report: one log line with their length and cause. */
  private reportUnderruns(event: ClockBridgeEvent): void {
    const report = underrunBetween(this.lastBridge, event);
    const depth = depthBetween(this.lastBridge, event);
    this.lastBridge = event;
    if (depth !== undefined) {
      this.log[depth.state === 'back' ? 'info' : 'warn']({ event: 'jitter-depth', ...depth }, `${this.label}: ${describeDepth(depth)}`);
      this.note(describeDepth(depth));
    }
    if (report === undefined) return;
    this.log.warn({ event: 'underrun', ...report }, `${this.label}: ${describeUnderrun(report)}`);
    this.note(describeUnderrun(report));
  }

  /**
   * Watches the links of the child's legs' interfaces while it runs (until onExit): each change of
   * a link goes into the legs' state. The watch tells the current state at once: a child started
   * on a link without carrier has that leg failed from its start.
   */
  private watchLinks(child: ChildProcess): void {
    this.unwatchLinks?.();
    this.unwatchLinks = undefined;
    const links = this.deps.links;
    if (links === undefined || this.legInterfaces.length === 0) return;
    const ends = this.legInterfaces.map(({ sink, interface: ifname }) =>
      links.watch(ifname, (cause) => {
        if (this.child === child) this.reportLeg(this.legs.onLink(sink, ifname, cause));
      }));
    this.unwatchLinks = () => {
      for (const end of ends) end();
    };
  }

  /** An output leg failed (its sends fail, or its interface has no carrier; the child goes on) or sends again: the log and the output ring. */
  private reportLeg(change: LegChange | undefined): void {
    if (change === undefined) return;
    const leg = legOfSink(change.sink) ?? change.sink;
    const where = change.interface !== undefined ? `link of ${change.interface}` : `sending to ${change.client ?? '?'}`;
    const text = change.state === 'failed'
      ? `output leg ${leg} failed: ${where}: ${change.error ?? 'unknown reason'}`
      : `output leg ${leg} is sending again`;
    if (change.state === 'failed') {
      const cause = change.interface !== undefined ? { interface: change.interface } : { destination: change.client };
      this.log.warn({ event: 'output-leg-failed', leg, sink: change.sink, ...cause, error: change.error }, `${this.label}: ${text}`);
    } else {
      this.log.info({ event: 'output-leg-recovered', leg, sink: change.sink }, `${this.label}: ${text}`);
    }
    this.output.push(`${new Date(this.deps.now()).toISOString()} engine: ${text}`);
  }

  /** The bridge switched inputs: one `failover` log line with the figures that triggered it. */
  private reportFailover(event: FailoverEvent): void {
    const report = failoverReport(event);
    this.log.warn({ event: 'failover', ...report }, `${this.label}: ${describeFailover(report)}`);
    this.note(describeFailover(report));
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
    let previousTick = this.deps.now();
    this.watchdog = setInterval(() => {
      const now = this.deps.now();
      const verdict = watchdogVerdict({
        now,
        previousTick,
        periodMs: period,
        lastProgressAt: stats.lastProgressAt ?? this.stateSince,
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
    }, period);
    this.watchdog.unref();
  }

  /** Kills `child` after `ms` unless it reaches PLAYING (or exits) first. */
  private armReadyTimer(child: ChildProcess, ms: number, kill: SupervisorKill): void {
    this.stopReadyTimer();
    this.readyTimer = setTimeout(() => {
      this.readyTimer = undefined;
      if (this.child !== child || this.state !== 'starting') return;
      this.killedBy = kill;
      this.log.warn({ event: 'start-timeout', cause: kill.cause, after_ms: ms }, `${this.label}: not PLAYING ${ms} ms after ${kill.cause === 'preroll-hang' ? 'the preroll failure' : 'start'}; killing the child`);
      child.signal('SIGKILL');
    }, ms);
    this.readyTimer.unref();
  }

  private stopReadyTimer(): void {
    if (this.readyTimer !== undefined) clearTimeout(this.readyTimer);
    this.readyTimer = undefined;
  }

  private stopWatchdog(): void {
    if (this.watchdog !== undefined) clearInterval(this.watchdog);
    this.watchdog = undefined;
  }

  private onExit(child: ChildProcess, exitCode: number | undefined, signal: string | undefined, spawnError: string | undefined): void {
    if (this.child !== child) return;
    this.child = undefined;
    this.unwatchLinks?.();
    this.unwatchLinks = undefined;
    this.control?.close();
    this.control = undefined;
    this.stopWatchdog();
    this.stopReadyTimer();
    const ranMs = this.deps.now() - this.childStartedAt;
    const stderr = this.recentStderr.last();
    const audioSeen = this.stats.childPassedAudio();
    this.stats.childEnded(); // the dead child's gauges read "no child" from now on; its counts stay in the totals
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
