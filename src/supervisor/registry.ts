/**
 * All pipelines of the engine: the one service REST and gRPC drive. Creating one validates
 * conflicts, persists the record durably, then starts its supervisor; deleting one ends its child
 * before it answers. At start every stored pipeline comes back with its id and runs again.
 */
import type { Logger } from 'pino';
import type { HostCapacity, PipelineCapacity } from '../capacity/host-capacity.js';
import { compilePipeline, compileSecrets, type CompileOptions } from '../compiler/compile.js';
import { LimitError, NotFoundError, PortInUseError } from '../errors.js';
import type { PortProbe } from '../net/udp-port.js';
import { redactInput, type SrtInputView } from '../spec/redact.js';
import type { PipelineSpec } from '../spec/schema.js';
import { newPipelineId, PIPELINE_ID } from '../store/ids.js';
import type { PipelineRecord, PipelineStore } from '../store/pipeline-store.js';
import type { InputReport } from '../stats/pipeline-stats.js';
import { PipelineSupervisor, type RuntimeInfo, type SupervisorDeps } from './supervisor.js';

/** A stored pipeline the host had no room for at start: it starts when room appears. */
export const WAITING_FOR_CAPACITY = 'waiting_for_capacity';
/** How often waiting pipelines are tried again, ms. */
const WAITING_RETRY_MS = 2000;

export type PipelineStatus = 'active' | 'failed';

/** A pipeline as clients see it: the record, the status and its child's runtime facts. */
export interface PipelineView extends Omit<RuntimeInfo, 'state'>, InputReport, PipelineCapacity {
  /** The child's state, or `waiting_for_capacity` (restored, no room yet). */
  state: RuntimeInfo['state'] | typeof WAITING_FOR_CAPACITY;
  id: string;
  name: string;
  status: PipelineStatus;
  created_at: string;
  /** The input with its passphrase shown as "set". */
  input: SrtInputView;
  processing: PipelineSpec['processing'];
  output: PipelineSpec['output'];
  priority: PipelineSpec['priority'];
}

export interface Pipeline {
  record: PipelineRecord;
  supervisor: PipelineSupervisor;
}

export interface RegistryOptions {
  store: PipelineStore;
  supervisorDeps: SupervisorDeps;
  maxPipelines: number;
  /** How pipeline specs compile to gst-launch argv (stats period, RTP packets per send). */
  compile: CompileOptions;
  probePort: (port: number) => Promise<PortProbe>;
  /** UDP ports held by something else of this engine (station harbors), with their owner. */
  reservedPorts: ReadonlyMap<number, string>;
  /** Admission control (capacity/): every start is admitted at its shape's full cost. */
  capacity?: Pick<HostCapacity, 'admit' | 'tryAdmit' | 'attach' | 'release' | 'pipeline' | 'niceIncrement'>;
  log: Logger;
  now: () => Date;
}

export class PipelineRegistry {
  private readonly pipelines = new Map<string, Pipeline>();
  /** Ports of pipelines being created (between the check and the record). */
  private readonly claiming = new Map<number, string>();
  private seq = 0;
  private closing = false;
  /** Restored pipelines without room yet, in creation order (their supervisors are not started). */
  private readonly waiting = new Set<string>();
  private waitingTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: RegistryOptions) {}

  /** Loads every stored pipeline and starts it. */
  async restore(): Promise<{ restored: number; damaged: number }> {
    const { records, damaged } = await this.options.store.open();
    for (const item of damaged) {
      this.options.log.error({ event: 'damaged-record', file: item.file, reason: item.reason }, `set aside a damaged pipeline record: ${item.file}: ${item.reason}`);
    }
    for (const record of records) {
      this.seq = Math.max(this.seq, record.seq);
      // In creation order until the host is full; the rest wait (and keep their order).
      if (this.waiting.size === 0 && (this.options.capacity?.tryAdmit(record.id, record.spec.processing) ?? true)) {
        this.startPipeline(record);
      } else {
        this.addWaiting(record);
      }
    }
    return { restored: records.length, damaged: damaged.length };
  }

  async create(spec: PipelineSpec): Promise<PipelineView> {
    if (this.closing) throw new LimitError('the engine is shutting down');
    if (this.pipelines.size + this.claiming.size >= this.options.maxPipelines) {
      throw new LimitError(`the engine runs at most ${this.options.maxPipelines} pipelines (engine.max_pipelines)`);
    }
    const port = spec.input.port;
    this.checkPortAmongOwn(port);
    const id = newPipelineId();
    this.claiming.set(port, id);
    try {
      const probe = await this.options.probePort(port);
      if (probe !== 'free') {
        throw new PortInUseError(port, `input.port ${port} is already in use by another process`);
      }
      this.options.capacity?.admit(id, spec.processing); // refused: nothing stored or started
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
        throw error;
      }
      const pipeline = this.startPipeline(record);
      return this.view(pipeline);
    } finally {
      this.claiming.delete(port);
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

  /** Ends the child, then forgets the record. Resolves once the child is gone. */
  async delete(id: string): Promise<void> {
    const pipeline = this.require(id);
    await pipeline.supervisor.stop();
    await this.options.store.remove(id);
    this.pipelines.delete(id);
    this.waiting.delete(id);
    this.options.capacity?.release(id);
    this.options.log.info({ event: 'deleted', pipeline_id: id }, `pipeline ${id} deleted`);
  }

  /** Stops every child (the records stay: they run again at the next start). */
  async shutdown(): Promise<void> {
    this.closing = true;
    if (this.waitingTimer !== undefined) clearInterval(this.waitingTimer);
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

  private checkPortAmongOwn(port: number): void {
    const reserved = this.options.reservedPorts.get(port);
    if (reserved !== undefined) throw new PortInUseError(port, `input.port ${port} is already in use by ${reserved}`);
    for (const { record } of this.pipelines.values()) {
      if (record.spec.input.port === port) {
        throw new PortInUseError(port, `input.port ${port} is already in use by pipeline ${record.id}`);
      }
    }
    const other = this.claiming.get(port);
    if (other !== undefined) throw new PortInUseError(port, `input.port ${port} is already in use by pipeline ${other}`);
  }

  /** Starts an admitted pipeline's child (its supervisor is made once, also for a waiting one). */
  private startPipeline(record: PipelineRecord): Pipeline {
    const pipeline = this.pipelines.get(record.id) ?? this.makePipeline(record);
    this.options.capacity?.attach(record.id, pipeline.supervisor);
    pipeline.supervisor.start();
    return pipeline;
  }

  private makePipeline(record: PipelineRecord): Pipeline {
    const args = compilePipeline(record.spec, this.options.compile);
    const niceIncrement = this.options.capacity?.niceIncrement(record.spec.priority) ?? 0;
    const supervisor = new PipelineSupervisor(record.id, args, this.options.supervisorDeps, {
      extraInput: compileSecrets(record.spec),
      niceIncrement,
    });
    const pipeline: Pipeline = { record, supervisor };
    this.pipelines.set(record.id, pipeline);
    return pipeline;
  }

  private addWaiting(record: PipelineRecord): void {
    this.makePipeline(record);
    this.waiting.add(record.id);
    this.options.log.warn({ event: 'waiting-for-capacity', pipeline_id: record.id }, `pipeline ${record.id}: waiting for capacity (the host is full)`);
    this.waitingTimer ??= setInterval(() => this.admitWaiting(), WAITING_RETRY_MS);
    this.waitingTimer.unref();
  }

  /** Starts waiting pipelines in creation order while they fit. */
  private admitWaiting(): void {
    for (const id of this.waiting) {
      const pipeline = this.pipelines.get(id);
      if (pipeline === undefined || this.closing) break;
      if (!(this.options.capacity?.tryAdmit(id, pipeline.record.spec.processing) ?? true)) break;
      this.waiting.delete(id);
      this.options.log.info({ event: 'capacity-available', pipeline_id: id }, `pipeline ${id}: room on the host, starting`);
      this.startPipeline(pipeline.record);
    }
    if (this.waiting.size === 0 && this.waitingTimer !== undefined) {
      clearInterval(this.waitingTimer);
      this.waitingTimer = undefined;
    }
  }

  private view({ record, supervisor }: Pipeline): PipelineView {
    const runtime = supervisor.snapshot();
    return {
      id: record.id,
      name: record.spec.name,
      status: runtime.state === 'failed' ? 'failed' : 'active',
      created_at: record.created_at,
      input: redactInput(record.spec.input),
      processing: record.spec.processing,
      output: record.spec.output,
      priority: record.spec.priority,
      ...runtime,
      ...(this.waiting.has(record.id) ? { state: WAITING_FOR_CAPACITY } : {}),
      ...supervisor.stats.report(this.options.now().getTime()),
      ...(this.options.capacity?.pipeline(record.id) ?? { realtime_ratio: null, behind: false }),
    };
  }
}
