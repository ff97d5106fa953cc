/**
 * One managed pipeline: a supervised child (supervisor/child-supervisor.ts) with the spec it runs,
 * the spec's version and what its children report (child-reports.ts), and the lifecycle an API
 * pipeline (registry.ts) and a station (stations/station.ts) share:
 *
 * - operations on it run one after the other (`serialize`), so concurrent calls never make two
 *   children or interleave two changes;
 * - a change (`change`) is planned from the old and the new spec (compiler/update.ts): parameters
 *   of existing steps go into the running child through its control channel and wait for its
 *   acknowledgement (`live`); anything else is admitted at the new graph's cost, then restarts the
 *   child (`restart`), or waits for the next start while the owner holds the child (`next-start`).
 *   The owner persists the new spec (its store) before anything is applied to the child's argv;
 *   a refusal anywhere (port, capacity, storage, a child that does not confirm) changes nothing;
 * - admission and start against the host's capacity (`admit`, `start`, `release`);
 * - the loudness measurement's reset (`resetLoudness`);
 * - the runtime part of the owner's view (`runtimeView`).
 *
 * What differs stays with the owner: where the spec comes from and is kept, when the child is
 * held, which ports it binds, what its view adds.
 */
import type { Logger } from 'pino';
import type { HostCapacity, PipelineCapacity } from '../capacity/host-capacity.js';
import { compilePlan, CONTROL_FD, type CompilableSpec, type CompileOptions, type PipelinePlan } from '../compiler/compile.js';
import { planUpdate, type UpdatePlan } from '../compiler/update.js';
import type { LinkWatch } from '../net/link-watcher.js';
import type { ClockReport, InputReport, PipelineStats } from '../stats/pipeline-stats.js';
import type { OutputLegs } from '../stats/output-legs.js';
import { ControlFailure, throwAsEngineError } from '../supervisor/control-channel.js';
import { ChildSupervisor, type RuntimeInfo, type SupervisorDeps, type SupervisorOptions } from '../supervisor/child-supervisor.js';
import { ChildReports } from './child-reports.js';
import { resetLoudnessMeasurement } from './loudness-reset.js';

/** What a pipeline's supervisor needs, and the engine's link watcher for its output legs. */
export type PipelineDeps = SupervisorDeps & {
  /** While a child runs, the links of its legs' interfaces are watched (child-reports.ts). */
  links?: LinkWatch;
};

/** How a change reached the pipeline (docs/api.md): see ManagedPipeline.change. */
export type Applied = 'live' | 'restart' | 'next-start';

/** The error code of a refused admission (capacity/host-capacity.ts). */
export type CapacityCode = 'HOST_AT_CAPACITY' | 'STATION_AT_CAPACITY';

export interface ManagedPipelineOptions<S extends CompilableSpec> {
  /** The supervisor's id: `pl_…` for a pipeline, `station:<id>` for a station. */
  id: string;
  /** How messages name it: `pipeline pl_…`, `station studio-a`. */
  label: string;
  spec: S;
  /** 1 for the first spec, +1 with every change. */
  version: number;
  compile: CompileOptions;
  /** What the compiler gets for a spec (the registry adds its fallback's decoded file); default: the spec itself. */
  compilable?: (spec: S) => CompilableSpec;
  supervisorDeps: PipelineDeps;
  /** The supervisor's options; the control channel comes from here. */
  supervisorOptions?: Omit<SupervisorOptions, 'controlFd'>;
  capacity?: Pick<HostCapacity, 'admit' | 'readmit' | 'attach' | 'release' | 'pipeline'>;
  /** The code of a refused admission (default HOST_AT_CAPACITY). */
  capacityCode?: CapacityCode;
  /** The owner does not want a child now (engine starting, no room yet, station stopped): a change waits for the next start. */
  held: () => boolean;
  /** Bound to the pipeline's ids (pipeline_id, station_id). */
  log: Logger;
  now: () => number;
}

/** What a change does beyond the common steps; every hook that throws refuses the change (nothing changed). */
export interface ChangeSteps<S> {
  /** Writes the new spec durably under its new version. */
  persist: (spec: S, version: number) => Promise<void>;
  /** Checks a restart needs besides capacity (a changed input port is free). */
  beforeRestart?: (previous: S, next: S) => Promise<void>;
}

export interface ChangeResult {
  applied: Applied;
  plan: UpdatePlan;
  version: number;
}

/** The runtime facts of a pipeline's view: its child, its input, its capacity, its clock bridge. */
export type RuntimeView = RuntimeInfo & InputReport & PipelineCapacity & {
  /** The clock bridge: drift, jitter buffer, latency; null before the child's first report. */
  clock: ClockReport | null;
};

/** What the readers of a running pipeline see (metrics, the page): its child and what it reports. */
export type PipelineRuntime = Pick<ManagedPipeline<CompilableSpec>, 'pid' | 'stats' | 'legs' | 'snapshot'>;

export class ManagedPipeline<S extends CompilableSpec> {
  readonly supervisor: ChildSupervisor;
  /** What its children report: statistics, output legs, and the log lines of both. */
  readonly reports: ChildReports;
  private currentSpec: S;
  private currentVersion: number;
  /** The operation in progress (and those queued behind it). */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: ManagedPipelineOptions<S>) {
    this.currentSpec = options.spec;
    this.currentVersion = options.version;
    const plan = this.plan(options.spec);
    const deps = options.supervisorDeps;
    this.supervisor = new ChildSupervisor(options.id, { argv: plan.argv, extraInput: plan.secrets }, deps, {
      ...options.supervisorOptions,
      controlFd: CONTROL_FD,
    });
    const reportsOptions = { log: options.log, label: options.label, now: options.now, statsIntervalMs: deps.statsIntervalMs, links: deps.links };
    this.reports = new ChildReports(reportsOptions, this.supervisor, plan);
    this.supervisor.observe(this.reports);
  }

  /** The pipeline's statistics (its whole life, summed over its children). */
  get stats(): PipelineStats {
    return this.reports.stats;
  }

  /** The current child's pid (capacity measures its CPU). */
  get pid(): number | undefined {
    return this.supervisor.pid;
  }

  /** The supervisor's account of its child. */
  snapshot(): RuntimeInfo {
    return this.supervisor.snapshot();
  }

  /** The current child's output legs. */
  get legs(): OutputLegs {
    return this.reports.legs;
  }

  get id(): string {
    return this.options.id;
  }

  get spec(): S {
    return this.currentSpec;
  }

  get version(): number {
    return this.currentVersion;
  }

  /** Runs `op` after every operation queued before it (whether that one succeeded or not). */
  serialize<T>(op: () => Promise<T>): Promise<T> {
    const run = this.chain.then(op, op);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Resolves once the operations queued so far have ended. */
  settled(): Promise<void> {
    return this.chain.then(() => undefined);
  }

  /** Takes a spec as the current one without a change (values read back at start): the next child runs it. */
  adopt(spec: S, version: number): void {
    this.currentSpec = spec;
    this.currentVersion = version;
    this.reconfigure(this.plan(spec));
  }

  /**
   * Changes the spec to `next` (not serialized: call it inside `serialize`). Parameters of
   * existing steps go into the running child and the answer waits for its acknowledgement
   * ('live'); input, output or the list of steps restart the child ('restart') once the host
   * admitted the new graph; while the owner holds the child the next start takes them
   * ('next-start'). The new spec is persisted before it reaches the child's argv; when the child
   * does not confirm a live change, nothing is persisted and nothing changes (UnavailableError).
   */
  async change(next: S, steps: ChangeSteps<S>): Promise<ChangeResult> {
    const { label, log } = this.options;
    const previous = this.currentSpec;
    const plan = planUpdate(previous, next);
    const version = this.currentVersion + 1;
    const nextPlan = this.plan(next);
    if (plan.kind === 'restart') {
      await steps.beforeRestart?.(previous, next);
      const held = this.options.held();
      if (!held) this.options.capacity?.readmit(this.id, next, this.options.capacityCode); // refused: nothing changes
      await steps.persist(next, version);
      this.take(next, version, nextPlan);
      const applied: Applied = held ? 'next-start' : 'restart';
      this.supervisor.note(`changed (${applied}), version ${version}`);
      if (held) {
        log.info({ event: 'updated', applied, version }, `${label} changed: its child is not started yet`);
        return { applied, plan, version };
      }
      log.info({ event: 'updated', applied, because: plan.reasons, version }, `${label} changed (${plan.reasons.join(', ')}): restarting its child`);
      await this.supervisor.restart();
      return { applied, plan, version };
    }
    let applied: Applied = 'live';
    if (plan.assignments.length > 0) {
      try {
        applied = await this.supervisor.applyLive(plan.assignments);
      } catch (error) {
        if (error instanceof ControlFailure) log.warn({ event: 'update-failed', reason: error.reason }, `${label}: change not applied: ${error.message}`);
        throwAsEngineError(error, label, '; nothing changed');
      }
    }
    await steps.persist(next, version);
    this.take(next, version, nextPlan);
    this.supervisor.note(`changed (${applied}), version ${version}`);
    log.info({ event: 'updated', applied, properties: plan.assignments.map((a) => `${a.element}.${a.property}`), version }, `${label} changed (${applied})`);
    return { applied, plan, version };
  }

  /** Admission control: refused (capacityCode) when the host cannot carry the graph; nothing is started. */
  admit(): void {
    this.options.capacity?.admit(this.id, this.currentSpec, this.options.capacityCode);
  }

  /** Starts the child of an admitted pipeline (measured from now on). */
  start(): void {
    this.options.capacity?.attach(this.id, this);
    this.supervisor.start();
  }

  /** The host no longer counts the pipeline. */
  release(): void {
    this.options.capacity?.release(this.id);
  }

  /**
   * Starts the programme measurement (integrated loudness, LRA, max true peak) of every loudness
   * step of the running child again (pipelines/loudness-reset.ts; not serialized). The gain is
   * not touched and nothing is stored. Resolves with the steps reset.
   */
  async resetLoudness(): Promise<string[]> {
    const steps = await resetLoudnessMeasurement(this.options.label, this.currentSpec, this.supervisor, this.options.log);
    this.supervisor.note(`loudness measurement reset (${steps.join(', ')})`);
    return steps;
  }

  runtimeView(): RuntimeView {
    const input = this.currentSpec.input;
    return {
      ...this.supervisor.snapshot(),
      ...this.stats.report(this.options.now()),
      ...(this.options.capacity?.pipeline(this.id) ?? { realtime_ratio: null, behind: false }),
      clock: this.stats.clockReport(input.type === 'srt' ? input.latency : 0) ?? null,
    };
  }

  private plan(spec: S): PipelinePlan {
    return compilePlan(this.options.compilable?.(spec) ?? spec, this.options.compile);
  }

  private reconfigure(plan: PipelinePlan): void {
    this.supervisor.reconfigure({ argv: plan.argv, extraInput: plan.secrets });
    this.reports.reconfigure(plan);
  }

  private take(spec: S, version: number, plan: PipelinePlan): void {
    this.currentSpec = spec;
    this.currentVersion = version;
    this.reconfigure(plan);
  }
}
