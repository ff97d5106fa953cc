/**
 * One station: a supervised pipeline (the same ManagedPipeline as an API pipeline) whose input
 * listens on the station's harbor port, 8100 + number - 1. Its source of truth is config.toml;
 * nothing is stored. Start, restart and stop are serialized per station, so concurrent calls never
 * make two children.
 *
 *   harbor = "srt":      srtsrc listener on the harbor port (UDP), exactly an API pipeline's graph
 *   harbor = "icecast":  a TCP listener in the engine (icecast-harbor.ts) feeding `fdsrc fd=0`
 *
 * Start checks the real bind first (UDP for SRT, TCP for Icecast): when another process holds
 * the port it fails with PORT_IN_USE (409) `port 8101 is already in use[ by <comm> (pid N)]`.
 */
import type { Writable } from 'node:stream';
import type { Logger } from 'pino';
import type { HostCapacity, PipelineCapacity } from '../capacity/host-capacity.js';
import type { CompilableSpec, CompileOptions } from '../compiler/compile.js';
import type { StationConfig } from '../config/schema.js';
import { PortInUseError } from '../errors.js';
import { applyProcessingPatch } from '../spec/patch.js';
import { REST_BODY } from '../spec/validate.js';
import type { StationValuesStore } from '../store/station-values.js';
import { ManagedPipeline, type Applied, type PipelineDeps } from '../pipelines/managed-pipeline.js';
import type { PortProbe } from '../net/udp-port.js';
import type { ClockReport, InputState } from '../stats/pipeline-stats.js';
import { SILENCE_REPORT_MS } from '../stats/pipeline-stats.js';
import type { ChildSupervisor, RuntimeInfo } from '../supervisor/child-supervisor.js';
import { IcecastHarbor, type SourceInfo } from './icecast-harbor.js';
import { portInUseMessage, type PortHolder, type Transport } from './port-holder.js';

export const HARBOR_BASE_PORT = 8100;
export const harborPort = (number: number): number => HARBOR_BASE_PORT + number - 1;

export interface StationDeps {
  supervisorDeps: PipelineDeps;
  /** How the station compiles to gst-launch argv (stats period, RTP packets per send). */
  compile: CompileOptions;
  probe: (port: number, transport: Transport) => Promise<PortProbe>;
  findHolder: (port: number, transport: Transport) => Promise<PortHolder | undefined>;
  log: Logger;
  now: () => number;
  /** Address the Icecast harbor listens on (srtsrc listens on 0.0.0.0; so does the harbor by default). */
  harborHost: string;
  /** How long a connecting source waits for the station's next child. */
  sourceWaitMs: number;
  /** Admission control (capacity/): a start is admitted at the full cost of the station's graph. */
  capacity?: Pick<HostCapacity, 'admit' | 'readmit' | 'attach' | 'release' | 'pipeline' | 'niceIncrement'>;
  /** Where live processing values (PATCH) are kept. */
  values: StationValuesStore;
}

/** A station as the dashboard shows it. The password is never part of it. */
export interface StationView extends RuntimeInfo, PipelineCapacity {
  id: string;
  number: number;
  name: string;
  harbor: 'srt' | 'icecast';
  harbor_port: number;
  /** SRT latency, ms (harbor srt only). */
  latency: number | null;
  /** The processing the station runs with: config.toml's, or the live values set by PATCH. */
  processing: StationConfig['processing'];
  /** `config`: config.toml's processing; `state`: live values kept in the state folder. */
  processing_source: 'config' | 'state';
  /** config.toml's processing (differs from `processing` when the source is `state`). */
  config_processing: StationConfig['processing'];
  /** 1 for the configured values, +1 with every change. */
  processing_version: number;
  output: StationConfig['output'];
  autostart: boolean;
  priority: StationConfig['priority'];
  /** Whether the engine keeps the station running (start: true; stop: false). */
  enabled: boolean;
  /** `active` while enabled, `stopped` otherwise, `failed` when its graph can never run. */
  status: 'active' | 'stopped' | 'failed';
  input_state: InputState;
  silence_seconds: number;
  srt_connected: boolean;
  /** The clock bridge: drift, jitter buffer, latency; null before the child's first report. */
  clock: ClockReport | null;
  /** The connected Icecast source (harbor icecast), or null. */
  source: SourceInfo | null;
}

export class Station {
  readonly id: string;
  readonly port: number;
  readonly supervisor: ChildSupervisor;
  /** The lifecycle shared with API pipelines: changes, admission, loudness reset, the runtime view. */
  /** The pipeline core it shares with an API pipeline: its child, spec, changes and reports. */
  readonly managed: ManagedPipeline<CompilableSpec>;
  private readonly harbor: IcecastHarbor | undefined;
  private readonly log: Logger;
  private enabled = false;
  /** Why the last start was refused (port held by another process), until the next start. */
  private startError: string | null = null;
  /** Child stdins a source has already used: each child takes one source. */
  private readonly usedInputs = new WeakSet<Writable>();
  /** Where the processing the station runs with comes from (see StationView). */
  private processingSource: 'config' | 'state' = 'config';
  private valuesLoaded = false;

  constructor(
    readonly config: StationConfig,
    private readonly deps: StationDeps,
  ) {
    this.id = config.id;
    this.port = harborPort(config.number);
    this.log = deps.log.child({ station_id: config.id, pipeline_id: `station:${config.id}` });
    this.managed = new ManagedPipeline({
      id: `station:${config.id}`,
      label: `station ${config.id}`,
      spec: this.specWith(config.processing),
      version: 1,
      compile: deps.compile,
      supervisorDeps: deps.supervisorDeps,
      supervisorOptions: {
        stdin: config.harbor === 'icecast',
        logFields: { station_id: config.id },
        label: `station ${config.id}`,
        traceInLog: true,
        niceIncrement: deps.capacity?.niceIncrement(config.priority) ?? 0,
      },
      capacity: deps.capacity,
      capacityCode: 'STATION_AT_CAPACITY',
      // A stopped station takes a change at its next start.
      held: () => !this.enabled,
      log: this.log,
      now: deps.now,
    });
    this.supervisor = this.managed.supervisor;
    if (config.harbor === 'icecast') {
      this.harbor = new IcecastHarbor({
        // The schema requires it with harbor = "icecast" (config/load.ts); never logged.
        password: config.password ?? '',
        log: this.log,
        note: (text) => this.supervisor.note(text),
        claimInput: () => this.claimInput(),
        returnInput: (input) => {
          this.usedInputs.delete(input);
          this.supervisor.inputReturned(input);
        },
        renewInput: (input) => void this.renewInput(input),
        // Audio reached the clock bridge: the graph itself plays (silence) from the start.
        playing: () => this.supervisor.snapshot().state === 'running' && this.managed.stats.childPassedAudio(),
        now: deps.now,
      });
    }
  }

  /** The processing the station runs with (config.toml's, or the live values). */
  private get processing(): StationConfig['processing'] {
    return this.managed.spec.processing;
  }

  private specWith(processing: StationConfig['processing']): CompilableSpec {
    const config = this.config;
    return {
      input: config.harbor === 'icecast' ? { type: 'stdin' } : { type: 'srt', port: this.port, latency: config.latency },
      processing,
      output: config.output,
    };
  }

  /**
   * Changes the station's processing parameters (`{"processing": [...]}`, merged as a pipeline's
   * change is): live in the running child when only parameters change, else a restart (or the
   * next start when the station is stopped). The values are stored before the answer.
   */
  update(patch: unknown): Promise<{ station: StationView; applied: Applied }> {
    return this.serialize(async () => {
      const processing = applyProcessingPatch(this.processing, patch, REST_BODY);
      const { applied } = await this.managed.change(this.specWith(processing), {
        persist: async (spec, version) => {
          await this.deps.values.put(this.id, {
            processing: spec.processing,
            config_processing: this.config.processing,
            version,
            updated_at: new Date(this.deps.now()).toISOString(),
          });
          this.processingSource = 'state';
        },
      });
      return { station: this.view(), applied };
    });
  }

  /** The stored live values, once: used unless config.toml's processing changed since they were set. */
  private async loadValues(): Promise<void> {
    if (this.valuesLoaded) return;
    this.valuesLoaded = true;
    let stored;
    try {
      stored = await this.deps.values.get(this.id);
    } catch (error) {
      this.log.error({ event: 'station-values-unreadable', err: error }, `station ${this.id}: stored processing values cannot be read; using config.toml's`);
      return;
    }
    if (stored === undefined) return;
    if (JSON.stringify(stored.config_processing) !== JSON.stringify(this.config.processing)) {
      this.log.warn({ event: 'station-values-stale' }, `station ${this.id}: config.toml's processing changed since the live values were set; using config.toml's`);
      await this.deps.values.remove(this.id);
      return;
    }
    try {
      const processing = applyProcessingPatch([], { processing: stored.processing }, { root: 'stations', separator: '.' });
      this.managed.adopt(this.specWith(processing), stored.version);
      this.processingSource = 'state';
    } catch (error) {
      this.log.error({ event: 'station-values-invalid', err: error }, `station ${this.id}: stored processing values are not valid; using config.toml's`);
    }
  }

  get transport(): Transport {
    return this.config.harbor === 'icecast' ? 'tcp' : 'udp';
  }

  /** Starts the station (no-op when it already runs); 409 when another process holds the harbor port. */
  start(): Promise<StationView> {
    return this.serialize(async () => {
      await this.doStart('start');
      return this.view();
    });
  }

  /** Replaces the child: stop (EOS) then start. */
  restart(): Promise<StationView> {
    return this.serialize(async () => {
      this.supervisor.note('restart requested');
      await this.doStop();
      await this.doStart('restart');
      return this.view();
    });
  }

  stop(): Promise<StationView> {
    return this.serialize(async () => {
      this.supervisor.note('stop requested');
      await this.doStop();
      return this.view();
    });
  }

  /** Restarts the loudness steps' programme measurement in the running child (pipelines/loudness-reset.ts). */
  resetLoudness(): Promise<{ steps: string[] }> {
    return this.serialize(async () => ({ steps: await this.managed.resetLoudness() }));
  }

  logs(lines: number): string[] {
    return this.supervisor.logs(lines);
  }

  view(): StationView {
    const runtime = this.managed.runtimeView();
    const source = this.harbor?.sourceInfo() ?? null;
    let inputState = runtime.input_state;
    if (this.config.harbor === 'icecast') {
      inputState = source === null ? 'waiting' : runtime.silence_seconds * 1000 >= SILENCE_REPORT_MS ? 'silent' : 'receiving';
    }
    return {
      id: this.config.id,
      number: this.config.number,
      name: this.config.name,
      harbor: this.config.harbor,
      harbor_port: this.port,
      latency: this.config.harbor === 'srt' ? this.config.latency : null,
      processing: this.processing,
      processing_source: this.processingSource,
      config_processing: this.config.processing,
      processing_version: this.managed.version,
      output: this.config.output,
      autostart: this.config.autostart,
      priority: this.config.priority,
      enabled: this.enabled,
      status: runtime.state === 'failed' ? 'failed' : this.enabled ? 'active' : 'stopped',
      ...runtime,
      last_error: runtime.state === 'running' ? runtime.last_error : (this.startError ?? runtime.last_error),
      input_state: inputState,
      source,
    };
  }

  private serialize<T>(op: () => Promise<T>): Promise<T> {
    const withValues = async (): Promise<T> => {
      await this.loadValues();
      return op();
    };
    return this.managed.serialize(withValues);
  }

  /** Is the station up with its harbor held by us? */
  private serving(): boolean {
    if (!this.enabled) return false;
    if (this.harbor !== undefined) return this.harbor.listening;
    return this.supervisor.pid !== undefined;
  }

  private async doStart(why: 'start' | 'restart' | 'autostart'): Promise<void> {
    if (this.serving()) {
      this.supervisor.note(`${why} requested: already running`);
      return;
    }
    if (why === 'start' || why === 'autostart') this.supervisor.note(`${why} requested`);
    const admittedBefore = this.enabled; // in back-off: still admitted
    this.admit();
    try {
      await this.bindHarbor();
    } catch (error) {
      if (!admittedBefore) this.managed.release();
      throw error;
    }
    this.startError = null;
    this.enabled = true;
    this.managed.start();
    this.log.info({ event: 'station-started', harbor: this.config.harbor, harbor_port: this.port, why }, `station ${this.id}: started (${why}), harbor ${this.config.harbor} on port ${this.port}`);
  }

  /** Admission control: refused (409, STATION_AT_CAPACITY) when the host cannot carry the station. */
  private admit(): void {
    try {
      this.managed.admit();
    } catch (error) {
      this.startError = (error as Error).message;
      this.supervisor.note(`start refused: ${this.startError}`);
      throw error;
    }
  }

  /** Checks or takes the harbor port (a held port: PORT_IN_USE). */
  private async bindHarbor(): Promise<void> {
    if (this.harbor !== undefined) {
      await this.supervisor.stop(); // a child left from an earlier run of the harbor
      try {
        await this.harbor.listen(this.port, this.deps.harborHost);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') await this.refuse();
        throw error;
      }
      this.supervisor.note(`harbor listening on TCP ${this.deps.harborHost}:${this.port} (Icecast source clients)`);
    } else {
      // Our child does not hold the port now (stopped, or in back-off): try the real bind.
      const probe = await this.deps.probe(this.port, 'udp');
      if (probe === 'in-use') await this.refuse();
      if (probe === 'denied') {
        this.startError = `port ${this.port} cannot be bound (permission denied)`;
        throw new PortInUseError(this.port, this.startError);
      }
      await this.supervisor.stop(); // ends a pending back-off: the new child starts at once
    }
  }

  private async refuse(): Promise<never> {
    const holder = await this.deps.findHolder(this.port, this.transport);
    const message = portInUseMessage(this.port, holder);
    this.startError = message;
    this.supervisor.note(`start refused: ${message}`);
    this.log.warn({ event: 'station-port-in-use', harbor_port: this.port, holder_pid: holder?.pid ?? null, holder_comm: holder?.comm ?? null }, `station ${this.id}: ${message}`);
    throw new PortInUseError(this.port, message);
  }

  private async doStop(): Promise<void> {
    this.enabled = false;
    await Promise.all([this.harbor?.close(), this.supervisor.stop()]);
    this.managed.release();
  }

  /** Engine start: start if autostart; a refusal is logged and shown, not fatal. */
  autostart(): Promise<void> {
    if (!this.config.autostart) return this.serialize(async () => undefined); // the stored values only
    return this.serialize(async () => {
      try {
        await this.doStart('autostart');
      } catch (error) {
        this.log.error({ event: 'station-autostart-failed' }, `station ${this.id}: not started: ${(error as Error).message}`);
      }
    });
  }

  /** Engine stop. */
  shutdown(): Promise<void> {
    return this.serialize(() => this.doStop());
  }

  /**
   * A source left after sending bytes that never played (a broken start, a client that gave up):
   * the child is replaced by a stop and a start, which is neither a failure nor a reason for
   * back-off. Only while that child is still the current one and the station runs.
   */
  private renewInput(input: Writable): Promise<void> {
    return this.serialize(async () => {
      if (!this.enabled || this.supervisor.input() !== input) {
        input.end();
        return;
      }
      this.supervisor.note('the source left before its audio played: replacing the child');
      await this.supervisor.stop();
      if (this.enabled) this.supervisor.start();
    });
  }

  /** Waits for a child of this station whose stdin no source has used yet. */
  private async claimInput(): Promise<Writable | undefined> {
    const until = this.deps.now() + this.deps.sourceWaitMs;
    for (;;) {
      if (!this.enabled) return undefined;
      const input = this.supervisor.input();
      if (input !== undefined && !this.usedInputs.has(input) && !input.destroyed && !input.writableEnded) {
        this.usedInputs.add(input);
        this.supervisor.inputTaken(input);
        return input;
      }
      if (this.deps.now() >= until) return undefined;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
