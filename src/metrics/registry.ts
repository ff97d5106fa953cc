/**
 * The engine's metrics: an own prom-client Registry (never the global one), every value read at
 * scrape time from the pipeline registry and /proc, so nothing is counted on the audio path. Every
 * per-pipeline series exists from the pipeline's creation (it is in the registry before any child)
 * to its deletion: a deleted pipeline's series are gone at the next scrape.
 */
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import type { HostCapacity } from '../capacity/host-capacity.js';
import type { PipelineRuntime } from '../pipelines/managed-pipeline.js';
import type { ChildState } from '../supervisor/state.js';
import { registerPipelineMetrics } from './pipeline-metrics.js';
import { registerOutputLegMetrics, type LegSource } from './output-leg-metrics.js';
import { readProcessStats, type ProcessStats } from './process-stats.js';

/**
 * What the metrics read: supervised children by id. The pipeline registry is one; the engine adds
 * its stations under the id `station:<station id>` (docs/stations.md).
 */
export interface SupervisedSource {
  /** `spec.input.latency`: the SRT latency (ms) of the pipeline's input, part of its latency estimate. */
  entries(): Iterable<{ record: { id: string; spec?: { input: { latency?: number } } }; managed: Pick<PipelineRuntime, 'pid' | 'stats' | 'snapshot'> }>;
}

const STATES: readonly ChildState[] = ['pending', 'starting', 'running', 'exited', 'backoff', 'failed', 'stopping', 'stopped'];

/** Count of stored pipeline records set aside at start-up (they do not run). */
export type DamagedRecordCount = () => number;

export function createMetrics(
  pipelines: SupervisedSource,
  version: string,
  capacity?: Pick<HostCapacity, 'headroomRatio' | 'overloaded' | 'pipeline'>,
  damagedRecords: DamagedRecordCount = () => 0,
  /** The same pipelines with their outputs: the output legs' metric (absent: no such series). */
  legs?: LegSource,
): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'audio_engine_' });
  // Gauges named *_total break the exposition conventions (promtool: "non-counter metrics should
  // not have _total suffix"); the same counts remain, by type, in the series without the suffix.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) {
    registry.removeSingleMetric(`audio_engine_${name}`);
  }

  new Gauge({
    name: 'audio_engine_info',
    help: 'Engine version (value is always 1).',
    labelNames: ['version'],
    registers: [registry],
  }).set({ version }, 1);

  new Gauge({
    name: 'audio_engine_damaged_records',
    help: 'Stored pipeline records set aside at start-up because they could not be read (those pipelines do not run; see /health).',
    registers: [registry],
    collect() {
      this.set(damagedRecords());
    },
  });

  new Gauge({
    name: 'audio_engine_pipelines',
    help: 'Pipelines by the state of their child process.',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      this.reset();
      const counts = new Map<ChildState, number>(STATES.map((s) => [s, 0]));
      for (const { managed } of pipelines.entries()) {
        const state = managed.snapshot().state;
        counts.set(state, (counts.get(state) ?? 0) + 1);
      }
      for (const [state, count] of counts) this.set({ state }, count);
    },
  });

  new Gauge({
    name: 'audio_engine_pipeline_up',
    help: '1 while the pipeline child is running, 0 otherwise.',
    labelNames: ['pipeline_id'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { record, managed } of pipelines.entries()) {
        this.set({ pipeline_id: record.id }, managed.snapshot().state === 'running' ? 1 : 0);
      }
    },
  });

  new Gauge({
    name: 'audio_engine_pipeline_state',
    help: 'State of the pipeline child: 1 for the current state, 0 for the others.',
    labelNames: ['pipeline_id', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { record, managed } of pipelines.entries()) {
        const current = managed.snapshot().state;
        for (const state of STATES) this.set({ pipeline_id: record.id, state }, state === current ? 1 : 0);
      }
    },
  });

  new Counter({
    name: 'audio_engine_pipeline_restarts_total',
    help: 'Restarts of the pipeline child since the pipeline was loaded.',
    labelNames: ['pipeline_id'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { record, managed } of pipelines.entries()) {
        this.inc({ pipeline_id: record.id }, managed.snapshot().restarts);
      }
    },
  });

  // Both child series read one /proc sample per scrape (they are collected together). CPU is the
  // pipeline's, summed over its children: a child's last sampled CPU time is kept when it is
  // replaced (what it used after the last scrape before its end is not counted). A sample is
  // shared for 100 ms unless a pipeline was added since: every pipeline is in every scrape.
  const cpu = new Map<string, { pid: number | undefined; last: number; base: number }>();
  let sample: { at: number; ids: Set<string>; values: Promise<Map<string, { cpuSeconds: number; residentBytes: number }>> } | undefined;
  const sampleChildren = (): Promise<Map<string, { cpuSeconds: number; residentBytes: number }>> => {
    const now = Date.now();
    const ids = [...pipelines.entries()].map((p) => p.record.id);
    if (sample === undefined || now - sample.at > 100 || ids.some((id) => !sample?.ids.has(id))) {
      sample = {
        at: now,
        ids: new Set(ids),
        values: Promise.all(
          [...pipelines.entries()].map(async ({ record, managed }) => {
            const pid = managed.pid;
            const stats: ProcessStats | undefined = pid === undefined ? undefined : await readProcessStats(pid);
            const seen = cpu.get(record.id) ?? { pid, last: 0, base: 0 };
            if (seen.pid !== pid) {
              seen.base += seen.last;
              seen.last = 0;
              seen.pid = pid;
            }
            if (stats !== undefined) seen.last = Math.max(seen.last, stats.cpuSeconds);
            cpu.set(record.id, seen);
            return [record.id, { cpuSeconds: seen.base + seen.last, residentBytes: stats?.residentBytes ?? 0 }] as const;
          }),
        ).then((rows) => {
          const live = new Set(rows.map(([id]) => id));
          for (const id of cpu.keys()) if (!live.has(id)) cpu.delete(id);
          return new Map(rows);
        }),
      };
    }
    return sample.values.then((values) => {
      const live = new Set([...pipelines.entries()].map((p) => p.record.id));
      return new Map([...values].filter(([id]) => live.has(id)));
    });
  };

  new Counter({
    name: 'audio_engine_pipeline_child_cpu_seconds_total',
    help: 'CPU time (user + system) used by the child processes of the pipeline since it was loaded, seconds.',
    labelNames: ['pipeline_id'],
    registers: [registry],
    async collect() {
      // Read first, then reset and fill in one go: a scrape running at the same time (they
      // share the sample) must not see this one's reset, nor add its values to this one's.
      const values = await sampleChildren();
      this.reset();
      for (const [id, stats] of values) this.inc({ pipeline_id: id }, stats.cpuSeconds);
    },
  });
  new Gauge({
    name: 'audio_engine_pipeline_child_resident_memory_bytes',
    help: 'Resident memory of the current child process of the pipeline, bytes (0 while it has none).',
    labelNames: ['pipeline_id'],
    registers: [registry],
    async collect() {
      const values = await sampleChildren();
      this.reset();
      for (const [id, stats] of values) this.set({ pipeline_id: id }, stats.residentBytes);
    },
  });

  if (capacity !== undefined) registerCapacityMetrics(registry, pipelines, capacity);
  registerPipelineMetrics(registry, pipelines);
  if (legs !== undefined) registerOutputLegMetrics(registry, legs);
  return registry;
}

/** Host headroom and each pipeline's real-time ratio (capacity/, docs/capacity.md). */
function registerCapacityMetrics(registry: Registry, pipelines: SupervisedSource, capacity: Pick<HostCapacity, 'headroomRatio' | 'overloaded' | 'pipeline'>): void {
  new Gauge({
    name: 'audio_engine_host_cpu_headroom_ratio',
    help: 'CPU left for new pipelines over the last window (capacity less reserve, other programs and every admitted pipeline at full cost), fraction of the host capacity; negative when overloaded.',
    registers: [registry],
    collect() {
      this.set(capacity.headroomRatio());
    },
  });
  new Gauge({
    name: 'audio_engine_host_overloaded',
    help: '1 while the host cannot carry its admitted pipelines within the reserve, 0 otherwise.',
    registers: [registry],
    collect() {
      this.set(capacity.overloaded() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'audio_engine_pipeline_realtime_ratio',
    help: 'Output RTP packets per second of host time / 1000 over the last window while receiving (1 = real time); NaN while not receiving.',
    labelNames: ['pipeline_id'],
    registers: [registry],
    collect() {
      this.reset();
      // Like every per-pipeline series, it exists from creation to deletion: NaN while unknown.
      for (const { record } of pipelines.entries()) this.set({ pipeline_id: record.id }, capacity.pipeline(record.id).realtime_ratio ?? Number.NaN);
    },
  });
}
