/**
 * All pipelines of the engine: the one service REST and gRPC drive. Creating one validates
 * conflicts, admits it against the host's capacity, persists the record durably, then starts its
 * supervisor; deleting one ends its child before it answers. At start every stored pipeline comes
 * back with its id and runs again, in creation order while the host has room.
 *
 * Start-up has two steps, so the edges can answer truthfully from their first request:
 * `load()` (before REST, gRPC and the dashboard listen) reads the store and puts every stored
 * pipeline in the registry with a held supervisor (state `pending`); `startChildren()` (once the
 * GStreamer check is done and the host's load measured) admits and starts them in creation order;
 * the ones that do not fit wait (`waiting_for_capacity`) and start when room appears. A pipeline
 * created between the two is admitted at its create, held, and starts with them. Each pipeline has
 * exactly one supervisor, made only by `addPipeline`.
 */
import path from 'node:path';
import type { Logger } from 'pino';
import type { HostCapacity, PipelineCapacity } from '../capacity/host-capacity.js';
import type { CompilableSpec, CompileOptions } from '../compiler/compile.js';
import { LimitError, NotFoundError, PortInUseError, StorageError, UnavailableError, ValidationError, VersionMismatchError } from '../errors.js';
import { applyPipelinePatch } from '../spec/patch.js';
import type { PathStyle } from '../spec/validate.js';
import { ManagedPipeline, type Applied, type PipelineDeps } from './managed-pipeline.js';
import type { PortProbe } from '../net/udp-port.js';
import { redactInput, type SrtInputView } from '../spec/redact.js';
import type { PipelineSpec } from '../spec/schema.js';
import { newPipelineId, PIPELINE_ID } from '../store/ids.js';
import type { PipelineRecord, PipelineStore } from '../store/pipeline-store.js';
import type { ClockReport, FailoverView, InputReport } from '../stats/pipeline-stats.js';
import type { Selection } from '../stats/parse-line.js';
import type { ChildSupervisor, RuntimeInfo } from '../supervisor/child-supervisor.js';
import { outputLegViews, type OutputLegView } from './output-legs-view.js';
import type { FallbackCache } from './fallback-cache.js';
import { parseSelectBody, withSelection } from '../spec/select.js';
import { ELEMENTS, formatValue } from '../compiler/elements.js';
import { ControlFailure } from '../supervisor/control-channel.js';

/** The state shown for a stored pipeline that the host has no room for yet. */
export const WAITING_FOR_CAPACITY = 'waiting_for_capacity';
/** How often waiting pipelines are tried again, ms. */
const WAITING_RETRY_MS = 2000;

export type PipelineStatus = 'active' | 'failed';

/** A pipeline as clients see it: the record, the status and its child's runtime facts. */
export interface PipelineView extends Omit<RuntimeInfo, 'state'>, InputReport, PipelineCapacity, FailoverView {
  /** The child's state, or `waiting_for_capacity` (restored, no room yet). */
  state: RuntimeInfo['state'] | typeof WAITING_FOR_CAPACITY;
  id: string;
  name: string;
  status: PipelineStatus;
  created_at: string;
  /** The input with its passphrase shown as "set". */
  input: SrtInputView;
  /** The backup input (passphrase shown as "set"); absent without one. */
  backup?: SrtInputView;
  /** The fallback file as given; absent without one. */
  fallback?: PipelineSpec['fallback'];
  /** The failover policy as given (defaults filled); absent without a backup or fallback. */
  failover?: PipelineSpec['failover'];
  /** What the bridge follows: `auto` (the policy) or a forced input, as stored (POST .../input). */
  selection: Selection;
  processing: PipelineSpec['processing'];
  output: PipelineSpec['output'];
  priority: PipelineSpec['priority'];
  /** The clock bridge: drift, jitter buffer, latency; null before the child's first report. */
  clock: ClockReport | null;
  /** 1 at creation, +1 with every change: the ETag, and what If-Match compares. */
  version: number;
  /** The output's legs (primary, and the ST 2022-7 redundant one) and whether each sends. */
  output_legs: OutputLegView[];
}

/** A stored record that could not be read and was set aside (renamed), with the reason. */
export interface DamagedRecord {
  /** File name, in <state_dir>/pipelines. */
  file: string;
  reason: string;
}

export interface UpdateResult {
  pipeline: PipelineView;
  applied: Applied;
}

export interface Pipeline {
  record: PipelineRecord;
  supervisor: ChildSupervisor;
  /** The lifecycle: changes, admission, loudness reset, the runtime view (managed-pipeline.ts). */
  managed: ManagedPipeline<PipelineSpec>;
}

export interface RegistryOptions {
  store: PipelineStore;
  supervisorDeps: PipelineDeps;
  maxPipelines: number;
  /** How pipeline specs compile to gst-launch argv (stats period, RTP packets per send). */
  compile: CompileOptions;
  probePort: (port: number) => Promise<PortProbe>;
  /** UDP ports held by something else of this engine (station harbors), with their owner. */
  reservedPorts: ReadonlyMap<number, string>;
  log: Logger;
  now: () => Date;
  /** Admission control (capacity/): every start is admitted at its shape's full cost. */
  capacity?: Pick<HostCapacity, 'admit' | 'readmit' | 'tryAdmit' | 'attach' | 'release' | 'pipeline' | 'niceIncrement'>;
  /** Checks and decodes fallback files (docs/failover.md); without it a spec with a fallback is refused. */
  fallback?: FallbackCache;
}

/** The UDP ports a pipeline's SRT listeners bind, each with the field that names it. */
function inputPorts(spec: PipelineSpec): [string, number][] {
  return spec.backup === undefined ? [['input.port', spec.input.port]] : [['input.port', spec.input.port], ['backup.port', spec.backup.port]];
}

export class PipelineRegistry {
  private readonly pipelines = new Map<string, Pipeline>();
  /** Ports of pipelines being created (between the check and the record). */
  private readonly claiming = new Map<number, string>();
  private seq = 0;
  private closing = false;
  /** False until startChildren(): new pipelines wait in `pending`. */
  private childrenAllowed = false;
  /** Pipelines created before startChildren(): admitted at their create, held until then. */
  private readonly admittedWhileHeld = new Set<string>();
  /** Stored pipelines without room yet, in creation order (held supervisors). */
  private readonly waiting = new Set<string>();
  private waitingTimer: NodeJS.Timeout | undefined;
  /** Records set aside at load (damaged), for health and metrics. */
  private damagedRecords: DamagedRecord[] = [];

  constructor(private readonly options: RegistryOptions) {}

  /**
   * Reads every stored pipeline (creating the store's folder) into the registry, held: no child
   * starts before startChildren(). Damaged records are set aside, logged and kept for health.
   */
  async load(): Promise<{ loaded: number; damaged: number }> {
    const { records, damaged } = await this.options.store.open();
    for (const item of damaged) {
      this.options.log.error({ event: 'damaged-record', file: item.file, reason: item.reason }, `set aside a damaged pipeline record: ${item.file}: ${item.reason}`);
    }
    this.damagedRecords = damaged.map((item) => ({ file: path.basename(item.file), reason: item.reason }));
    for (const record of records) {
      this.seq = Math.max(this.seq, record.seq);
      this.addPipeline(record);
      await this.restoreFallback(record);
    }
    return { loaded: records.length, damaged: damaged.length };
  }

  /**
   * Starts the held pipelines in creation order while the host has room; the rest wait, in order,
   * and start when room appears. Pipelines created from now on start at once. Returns how many
   * started.
   */
  startChildren(): number {
    if (this.closing || this.childrenAllowed) return 0;
    this.childrenAllowed = true;
    let started = 0;
    for (const pipeline of this.pipelines.values()) {
      const { record, supervisor } = pipeline;
      if (supervisor.snapshot().state !== 'pending') continue;
      const admitted = this.admittedWhileHeld.delete(record.id)
        || (this.waiting.size === 0 && (this.options.capacity?.tryAdmit(record.id, record.spec) ?? true));
      if (admitted) {
        this.startAdmitted(pipeline);
        started += 1;
      } else {
        this.addWaiting(record.id);
      }
    }
    return started;
  }

  /** Records set aside at load. */
  damaged(): readonly DamagedRecord[] {
    return this.damagedRecords;
  }

  async create(spec: PipelineSpec): Promise<PipelineView> {
    if (this.closing) throw new LimitError('the engine is shutting down');
    if (this.pipelines.size + this.claiming.size >= this.options.maxPipelines) {
      throw new LimitError(`the engine runs at most ${this.options.maxPipelines} pipelines (engine.max_pipelines)`);
    }
    const ports = inputPorts(spec);
    for (const [field, port] of ports) this.checkPortAmongOwn(port, field);
    const id = newPipelineId();
    for (const [, port] of ports) this.claiming.set(port, id);
    try {
      for (const [field, port] of ports) {
        if ((await this.options.probePort(port)) !== 'free') {
          throw new PortInUseError(port, `${field} ${port} is already in use by another process`);
        }
      }
      const fallbackFile = await this.prepareFallback(id, spec); // refused: nothing stored or started
      try {
        this.options.capacity?.admit(id, spec); // refused: nothing stored or started
      } catch (error) {
        await this.options.fallback?.removeAll(id);
        throw error;
      }
      const record: PipelineRecord = {
        id,
        seq: ++this.seq,
        created_at: this.options.now().toISOString(),
        spec,
      };
      try {
        await this.options.store.put(record);
      } catch (error) {
        this.options.capacity?.release(id);
        if (fallbackFile !== undefined) await this.options.fallback?.removeAll(id);
        // StorageError: the store left nothing behind; the port claim ends below.
        if (error instanceof StorageError) this.options.log.error({ event: 'store-failed', errno: error.errno, pipeline_id: id, port: spec.input.port }, `pipeline not created: ${error.message}`);
        throw error;
      }
      const pipeline = this.addPipeline(record);
      if (this.childrenAllowed) this.startAdmitted(pipeline);
      else this.admittedWhileHeld.add(id);
      return this.view(pipeline);
    } finally {
      for (const [, port] of ports) this.claiming.delete(port);
    }
  }

  list(): PipelineView[] {
    return [...this.pipelines.values()].map((p) => this.view(p));
  }

  get(id: string): PipelineView {
    return this.view(this.require(id));
  }

  /** The live pipelines, for metrics and streams. */
  entries(): IterableIterator<Pipeline> {
    return this.pipelines.values();
  }

  get size(): number {
    return this.pipelines.size;
  }

  /**
   * Changes a pipeline (a merge patch, spec/patch.ts), one change per pipeline at a time.
   * `expectedVersion` (If-Match): refused with VersionMismatchError unless it is the current one.
   * Parameters of existing steps go into the running child through its control channel and the
   * answer waits for its acknowledgement ('live'); input, output or the list of steps restart the
   * child ('restart'); with no child running the next start takes them ('next-start'). The new
   * record is written durably before this resolves; when the child does not confirm a live
   * change, nothing is written and nothing changes (UnavailableError). `onStored` is called once
   * the new record is written (before a restart of the child, after a live change).
   */
  async update(id: string, patch: unknown, style: PathStyle, expectedVersion?: number, onStored?: () => void): Promise<UpdateResult> {
    return this.require(id).managed.serialize(() => this.updateNow(id, patch, style, expectedVersion, onStored));
  }

  private async updateNow(id: string, patch: unknown, style: PathStyle, expectedVersion: number | undefined, onStored: (() => void) | undefined): Promise<UpdateResult> {
    if (this.closing) throw new UnavailableError('the engine is shutting down');
    const pipeline = this.require(id);
    const { record, managed } = pipeline;
    const version = record.version ?? 1;
    if (expectedVersion !== undefined && expectedVersion !== version) {
      throw new VersionMismatchError(`pipeline ${id} is at version ${version}, not ${expectedVersion}; read it again and retry`);
    }
    const spec = applyPipelinePatch(record.spec, patch, style);
    // A new or changed fallback (or channels) is decoded before anything is stored; refused: nothing changes.
    const oldFile = this.compilable(id, record.spec).fallbackFile;
    let newFile = oldFile;
    let result: Awaited<ReturnType<typeof managed.change>>;
    try {
      result = await managed.change(spec, {
        beforeRestart: async () => {
          const old = new Set(inputPorts(record.spec).map(([, port]) => port));
          for (const [field, port] of inputPorts(spec)) if (!old.has(port)) await this.checkNewPort(port, field, id);
          if (JSON.stringify([record.spec.fallback, record.spec.output.channels]) !== JSON.stringify([spec.fallback, spec.output.channels])) {
            newFile = await this.prepareFallback(id, spec);
          }
        },
        persist: async (_spec, nextVersion) => {
          const next: PipelineRecord = { ...record, spec, version: nextVersion };
          await this.options.store.put(next);
          pipeline.record = next;
          onStored?.();
        },
      });
    } catch (error) {
      if (newFile !== oldFile) await this.options.fallback?.removeAll(id, oldFile);
      throw error;
    }
    if (newFile !== oldFile) await this.options.fallback?.removeAll(id, newFile);
    const { applied } = result;
    return { pipeline: this.view(pipeline), applied };
  }

  /**
   * Forces an input on air or hands back to the policy (`{"select": ...}`, docs/failover.md), in
   * turn with the pipeline's changes. The choice is stored durably first (a new child, after a
   * crash or a kill -9 of the engine, starts with it: the compiler sets the bridge's `select`),
   * then sent to the running child (`bridge.select=<nick>`): 'live' once it confirmed,
   * 'next-start' without a running child. An input the pipeline does not have names `select`.
   */
  select(id: string, body: unknown, style: PathStyle): Promise<UpdateResult> {
    return this.require(id).managed.serialize(() => this.selectNow(id, body, style));
  }

  private async selectNow(id: string, body: unknown, style: PathStyle): Promise<UpdateResult> {
    if (this.closing) throw new UnavailableError('the engine is shutting down');
    const pipeline = this.require(id);
    const select = parseSelectBody(body, style);
    const { record, managed, supervisor } = pipeline;
    const spec = withSelection(record.spec, select, style);
    const next: PipelineRecord = { ...record, spec, version: (record.version ?? 1) + 1 };
    await this.options.store.put(next);
    pipeline.record = next;
    managed.adopt(spec, next.version ?? 1);
    let applied: Applied = 'next-start';
    try {
      applied = await supervisor.applyLive([{ element: 'bridge', property: 'select', value: formatValue('clockbridge', 'select', ELEMENTS.clockbridge.select, select) }]);
    } catch (error) {
      // Stored: a child that did not answer is ended and the next starts with the choice.
      if (!(error instanceof ControlFailure)) throw error;
      this.options.log.warn({ event: 'select-failed', pipeline_id: id, reason: error.reason }, `pipeline ${id}: input ${select} stored, not confirmed by the child: ${error.message}`);
    }
    this.options.log.info({ event: 'input-selected', pipeline_id: id, select, applied, version: next.version }, `pipeline ${id}: input ${select} selected (${applied})`);
    return { pipeline: this.view(pipeline), applied };
  }

  /**
   * Starts the programme measurement (integrated loudness, LRA, max true peak) of every loudness
   * step of a running pipeline again, as an operator resets a loudness meter at the start of a
   * programme. The gain is not touched and nothing is stored: a new child measures from its start
   * anyway. Waits for the child's acknowledgement; resolves with the steps reset.
   */
  async resetLoudness(id: string): Promise<{ steps: string[] }> {
    if (this.closing) throw new UnavailableError('the engine is shutting down');
    const { managed } = this.require(id);
    const steps = await managed.serialize(() => managed.resetLoudness());
    return { steps };
  }

  /** Ends the child, then forgets the record. Resolves once the child is gone. */
  async delete(id: string): Promise<void> {
    await this.require(id).managed.settled(); // a change in progress ends first
    const pipeline = this.require(id);
    await pipeline.supervisor.stop();
    await this.options.store.remove(id);
    this.pipelines.delete(id);
    this.waiting.delete(id);
    this.admittedWhileHeld.delete(id);
    pipeline.managed.release();
    await this.options.fallback?.removeAll(id);
    this.options.log.info({ event: 'deleted', pipeline_id: id }, `pipeline ${id} deleted`);
  }

  /** Stops every child (the records stay: they run again at the next start). */
  async shutdown(): Promise<void> {
    this.closing = true;
    if (this.waitingTimer !== undefined) clearInterval(this.waitingTimer);
    this.waitingTimer = undefined;
    await Promise.all([...this.pipelines.values()].map((p) => p.supervisor.stop()));
  }

  logs(id: string, lines: number): string[] {
    return this.require(id).supervisor.logs(lines);
  }

  private require(id: string): Pipeline {
    const pipeline = PIPELINE_ID.test(id) ? this.pipelines.get(id) : undefined;
    if (pipeline === undefined) throw new NotFoundError(`pipeline ${id} not found`);
    return pipeline;
  }

  /** A changed input port: free among ours and on the host (the pipeline's own old ports aside). */
  private async checkNewPort(port: number, field: string, self: string): Promise<void> {
    this.checkPortAmongOwn(port, field, self);
    if ((await this.options.probePort(port)) !== 'free') {
      throw new PortInUseError(port, `${field} ${port} is already in use by another process`);
    }
  }

  /** `field` (input.port, backup.port) names the port in the error; every input port of every other pipeline counts. */
  private checkPortAmongOwn(port: number, field: string, self?: string): void {
    const reserved = this.options.reservedPorts.get(port);
    if (reserved !== undefined) throw new PortInUseError(port, `${field} ${port} is already in use by ${reserved}`);
    for (const { record } of this.pipelines.values()) {
      if (record.id !== self && inputPorts(record.spec).some(([, p]) => p === port)) {
        throw new PortInUseError(port, `${field} ${port} is already in use by pipeline ${record.id}`);
      }
    }
    const other = this.claiming.get(port);
    if (other !== undefined) throw new PortInUseError(port, `${field} ${port} is already in use by pipeline ${other}`);
  }

  /** A stored pipeline whose fallback's decoded copy is gone (a cleaned state dir): decoded again, or logged. */
  private async restoreFallback(record: PipelineRecord): Promise<void> {
    const file = this.compilable(record.id, record.spec).fallbackFile;
    if (file === undefined || (await this.options.fallback?.has(file)) !== false) return;
    try {
      await this.prepareFallback(record.id, record.spec);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      this.options.log.error({ event: 'fallback-missing', pipeline_id: record.id }, `pipeline ${record.id}: its fallback file could not be decoded again: ${reason}`);
    }
  }

  /** What the compiler gets for a pipeline's spec: with the path of its fallback's decoded copy. */
  private compilable(id: string, spec: PipelineSpec): CompilableSpec {
    const { fallback } = spec;
    if (fallback === undefined || this.options.fallback === undefined) return spec;
    return { ...spec, fallbackFile: this.options.fallback.fileOf(id, fallback, spec.output.channels) };
  }

  /** Checks and decodes a spec's fallback file (none: undefined); a ValidationError naming fallback.path. */
  private async prepareFallback(id: string, spec: PipelineSpec): Promise<string | undefined> {
    if (spec.fallback === undefined) return undefined;
    if (this.options.fallback === undefined) throw new ValidationError('fallback is not available in this engine', ['fallback']);
    return this.options.fallback.prepare(id, spec.fallback, spec.output.channels);
  }

  /** The one place a pipeline gets its supervisor, held (`pending`) until it is admitted and started. */
  private addPipeline(record: PipelineRecord): Pipeline {
    if (this.pipelines.has(record.id)) throw new Error(`pipeline ${record.id} is already in the registry`);
    const niceIncrement = this.options.capacity?.niceIncrement(record.spec.priority) ?? 0;
    const managed: ManagedPipeline<PipelineSpec> = new ManagedPipeline({
      id: record.id,
      label: `pipeline ${record.id}`,
      spec: record.spec,
      version: record.version ?? 1,
      compile: this.options.compile,
      compilable: (spec) => this.compilable(record.id, spec),
      supervisorDeps: this.options.supervisorDeps,
      supervisorOptions: { niceIncrement },
      capacity: this.options.capacity,
      // Held (the engine is starting, or the host had no room yet): a change waits for its start.
      held: () => managed.supervisor.snapshot().state === 'pending',
      log: this.options.log.child({ pipeline_id: record.id }),
      now: () => this.options.now().getTime(),
    });
    const pipeline: Pipeline = { record, supervisor: managed.supervisor, managed };
    this.pipelines.set(record.id, pipeline);
    managed.supervisor.hold();
    return pipeline;
  }

  /** Starts the child of a pipeline the capacity admitted (measured from now on). */
  private startAdmitted(pipeline: Pipeline): void {
    pipeline.managed.start();
  }

  private addWaiting(id: string): void {
    this.waiting.add(id);
    this.options.log.warn({ event: 'waiting-for-capacity', pipeline_id: id }, `pipeline ${id}: waiting for capacity (the host is full)`);
    this.waitingTimer ??= setInterval(() => this.admitWaiting(), WAITING_RETRY_MS);
    this.waitingTimer.unref();
  }

  /** Starts waiting pipelines in creation order while they fit. */
  private admitWaiting(): void {
    for (const id of this.waiting) {
      const pipeline = this.pipelines.get(id);
      if (pipeline === undefined || this.closing) break;
      if (!(this.options.capacity?.tryAdmit(id, pipeline.record.spec) ?? true)) break;
      this.waiting.delete(id);
      this.options.log.info({ event: 'capacity-available', pipeline_id: id }, `pipeline ${id}: room on the host, starting`);
      this.startAdmitted(pipeline);
    }
    if (this.waiting.size === 0 && this.waitingTimer !== undefined) {
      clearInterval(this.waitingTimer);
      this.waitingTimer = undefined;
    }
  }

  private view({ record, managed }: Pipeline): PipelineView {
    const runtime = managed.runtimeView();
    return {
      id: record.id,
      name: record.spec.name,
      status: runtime.state === 'failed' ? 'failed' : 'active',
      created_at: record.created_at,
      input: redactInput(record.spec.input),
      ...(record.spec.backup === undefined ? {} : { backup: redactInput(record.spec.backup) }),
      ...(record.spec.fallback === undefined ? {} : { fallback: record.spec.fallback }),
      ...(record.spec.failover === undefined ? {} : { failover: record.spec.failover }),
      ...managed.stats.failoverView(),
      selection: record.spec.selection ?? 'auto',
      processing: record.spec.processing,
      output: record.spec.output,
      priority: record.spec.priority,
      version: record.version ?? 1,
      ...runtime,
      ...(this.waiting.has(record.id) ? { state: WAITING_FOR_CAPACITY } : {}),
      output_legs: outputLegViews(record.spec.output, managed),
    };
  }
}
