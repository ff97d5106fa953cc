/**
 * All pipelines of the engine: the one service REST and gRPC drive. Creating one validates
 * conflicts, persists the record durably, then starts its supervisor; deleting one ends its child
 * before it answers. At start every stored pipeline comes back with its id and runs again.
 */
import type { Logger } from 'pino';
import { compilePipeline, type CompileOptions } from '../compiler/compile.js';
import { LimitError, NotFoundError, PortInUseError } from '../errors.js';
import type { PortProbe } from '../net/udp-port.js';
import type { PipelineSpec } from '../spec/schema.js';
import { newPipelineId, PIPELINE_ID } from '../store/ids.js';
import type { PipelineRecord, PipelineStore } from '../store/pipeline-store.js';
import type { ClockReport, InputReport } from '../stats/pipeline-stats.js';
import { PipelineSupervisor, type RuntimeInfo, type SupervisorDeps } from './supervisor.js';

export type PipelineStatus = 'active' | 'failed';

/** A pipeline as clients see it: the record, the status and its child's runtime facts. */
export interface PipelineView extends RuntimeInfo, InputReport {
  id: string;
  name: string;
  status: PipelineStatus;
  created_at: string;
  input: PipelineSpec['input'];
  processing: PipelineSpec['processing'];
  output: PipelineSpec['output'];
  /** The clock bridge: drift, jitter buffer, latency; null before the child's first report. */
  clock: ClockReport | null;
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
  log: Logger;
  now: () => Date;
}

export class PipelineRegistry {
  private readonly pipelines = new Map<string, Pipeline>();
  /** Ports of pipelines being created (between the check and the record). */
  private readonly claiming = new Map<number, string>();
  private seq = 0;
  private closing = false;

  constructor(private readonly options: RegistryOptions) {}

  /** Loads every stored pipeline and starts it. */
  async restore(): Promise<{ restored: number; damaged: number }> {
    const { records, damaged } = await this.options.store.open();
    for (const item of damaged) {
      this.options.log.error({ event: 'damaged-record', file: item.file, reason: item.reason }, `set aside a damaged pipeline record: ${item.file}: ${item.reason}`);
    }
    for (const record of records) {
      this.seq = Math.max(this.seq, record.seq);
      this.startPipeline(record);
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
      const record: PipelineRecord = {
        id,
        seq: ++this.seq,
        created_at: this.options.now().toISOString(),
        spec,
      };
      await this.options.store.put(record);
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
    this.options.log.info({ event: 'deleted', pipeline_id: id }, `pipeline ${id} deleted`);
  }

  /** Stops every child (the records stay: they run again at the next start). */
  async shutdown(): Promise<void> {
    this.closing = true;
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

  private startPipeline(record: PipelineRecord): Pipeline {
    const args = compilePipeline(record.spec, this.options.compile);
    const supervisor = new PipelineSupervisor(record.id, args, this.options.supervisorDeps);
    const pipeline: Pipeline = { record, supervisor };
    this.pipelines.set(record.id, pipeline);
    supervisor.start();
    return pipeline;
  }

  private view({ record, supervisor }: Pipeline): PipelineView {
    const runtime = supervisor.snapshot();
    return {
      id: record.id,
      name: record.spec.name,
      status: runtime.state === 'failed' ? 'failed' : 'active',
      created_at: record.created_at,
      input: record.spec.input,
      processing: record.spec.processing,
      output: record.spec.output,
      ...runtime,
      ...supervisor.stats.report(this.options.now().getTime()),
      clock: supervisor.stats.clockReport(record.spec.input.latency) ?? null,
    };
  }
}
