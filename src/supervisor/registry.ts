/**
 * All pipelines of the engine: the one service REST and gRPC drive. Creating one validates
 * conflicts, persists the record durably, then starts its supervisor; deleting one ends its child
 * before it answers. At start every stored pipeline comes back with its id and runs again.
 */
import type { Logger } from 'pino';
import { compilePipeline, compileSecrets, CONTROL_FD, type CompileOptions } from '../compiler/compile.js';
import { planUpdate } from '../compiler/update.js';
import { ChangeRefusedError, LimitError, NotFoundError, PortInUseError, UnavailableError, VersionMismatchError } from '../errors.js';
import { applyPipelinePatch } from '../spec/patch.js';
import type { PathStyle } from '../spec/validate.js';
import { ControlFailure } from './control-channel.js';
import type { PortProbe } from '../net/udp-port.js';
import { redactInput, type SrtInputView } from '../spec/redact.js';
import type { PipelineSpec } from '../spec/schema.js';
import { newPipelineId, PIPELINE_ID } from '../store/ids.js';
import type { PipelineRecord, PipelineStore } from '../store/pipeline-store.js';
import type { InputReport } from '../stats/pipeline-stats.js';
import { PipelineSupervisor, type RuntimeInfo, type SupervisorDeps } from './supervisor.js';

export type PipelineStatus = 'active' | 'failed';

/** A pipeline as clients see it: the record, the status and its child's runtime facts. */
export interface PipelineView extends RuntimeInfo, InputReport {
  id: string;
  name: string;
  status: PipelineStatus;
  created_at: string;
  /** The input with its passphrase shown as "set". */
  input: SrtInputView;
  processing: PipelineSpec['processing'];
  output: PipelineSpec['output'];
  /** 1 at creation, +1 with every change: the ETag, and what If-Match compares. */
  version: number;
}

/** How a change reached the pipeline (docs/api.md): see PipelineRegistry.update. */
export type Applied = 'live' | 'restart' | 'next-start';

export interface UpdateResult {
  pipeline: PipelineView;
  applied: Applied;
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
  /** The change in progress per pipeline: changes of one pipeline run one after the other. */
  private readonly updating = new Map<string, Promise<unknown>>();

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

  /**
   * Changes a pipeline (a merge patch, spec/patch.ts), one change per pipeline at a time.
   * `expectedVersion` (If-Match): refused with VersionMismatchError unless it is the current one.
   * Parameters of existing steps go into the running child through its control channel and the
   * answer waits for its acknowledgement ('live'); input, output or the list of steps restart the
   * child ('restart'); with no child running the next start takes them ('next-start'). The new
   * record is written durably before this resolves; when the child does not confirm a live
   * change, nothing is written and nothing changes (UnavailableError).
   */
  update(id: string, patch: unknown, style: PathStyle, expectedVersion?: number): Promise<UpdateResult> {
    const previous = this.updating.get(id) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.updateNow(id, patch, style, expectedVersion));
    this.updating.set(id, run);
    const cleanup = (): void => {
      if (this.updating.get(id) === run) this.updating.delete(id);
    };
    run.then(cleanup, cleanup);
    return run;
  }

  private async updateNow(id: string, patch: unknown, style: PathStyle, expectedVersion: number | undefined): Promise<UpdateResult> {
    if (this.closing) throw new UnavailableError('the engine is shutting down');
    const pipeline = this.require(id);
    const { record, supervisor } = pipeline;
    const version = record.version ?? 1;
    if (expectedVersion !== undefined && expectedVersion !== version) {
      throw new VersionMismatchError(`pipeline ${id} is at version ${version}, not ${expectedVersion}; read it again and retry`);
    }
    const spec = applyPipelinePatch(record.spec, patch, style);
    const plan = planUpdate(record.spec, spec);
    const next: PipelineRecord = { ...record, spec, version: version + 1 };
    const args = compilePipeline(spec, this.options.compile);
    const secrets = compileSecrets(spec);
    if (plan.kind === 'restart') {
      if (spec.input.port !== record.spec.input.port) await this.checkNewPort(spec.input.port, id);
      await this.options.store.put(next);
      pipeline.record = next;
      supervisor.reconfigure(args, secrets);
      this.options.log.info({ event: 'updated', pipeline_id: id, applied: 'restart', because: plan.reasons, version: next.version }, `pipeline ${id} changed (${plan.reasons.join(', ')}): restarting its child`);
      await supervisor.restart();
      return { pipeline: this.view(pipeline), applied: 'restart' };
    }
    let applied: Applied = 'live';
    if (plan.assignments.length > 0) {
      try {
        applied = await supervisor.applyLive(plan.assignments);
      } catch (error) {
        if (!(error instanceof ControlFailure)) throw error;
        this.options.log.warn({ event: 'update-failed', pipeline_id: id, reason: error.reason }, `pipeline ${id}: change not applied: ${error.message}`);
        if (error.reason === 'refused') throw new ChangeRefusedError(`pipeline ${id}: ${error.message}; nothing changed`);
        throw new UnavailableError(`pipeline ${id}: ${error.message}; nothing changed`);
      }
    }
    supervisor.reconfigure(args, secrets);
    await this.options.store.put(next);
    pipeline.record = next;
    this.options.log.info(
      { event: 'updated', pipeline_id: id, applied, properties: plan.assignments.map((a) => `${a.element}.${a.property}`), version: next.version },
      `pipeline ${id} changed (${applied})`,
    );
    return { pipeline: this.view(pipeline), applied };
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

  /** A changed input port: free among ours and on the host (the pipeline's own old port aside). */
  private async checkNewPort(port: number, self: string): Promise<void> {
    this.checkPortAmongOwn(port, self);
    if ((await this.options.probePort(port)) !== 'free') {
      throw new PortInUseError(port, `input.port ${port} is already in use by another process`);
    }
  }

  private checkPortAmongOwn(port: number, self?: string): void {
    const reserved = this.options.reservedPorts.get(port);
    if (reserved !== undefined) throw new PortInUseError(port, `input.port ${port} is already in use by ${reserved}`);
    for (const { record } of this.pipelines.values()) {
      if (record.id !== self && record.spec.input.port === port) {
        throw new PortInUseError(port, `input.port ${port} is already in use by pipeline ${record.id}`);
      }
    }
    const other = this.claiming.get(port);
    if (other !== undefined) throw new PortInUseError(port, `input.port ${port} is already in use by pipeline ${other}`);
  }

  private startPipeline(record: PipelineRecord): Pipeline {
    const args = compilePipeline(record.spec, this.options.compile);
    const supervisor = new PipelineSupervisor(record.id, args, this.options.supervisorDeps, {
      extraInput: compileSecrets(record.spec),
      controlFd: CONTROL_FD,
    });
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
      input: redactInput(record.spec.input),
      processing: record.spec.processing,
      output: record.spec.output,
      version: record.version ?? 1,
      ...runtime,
      ...supervisor.stats.report(this.options.now().getTime()),
    };
  }
}
