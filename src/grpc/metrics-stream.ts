/**
 * The StreamMetrics source: one sampler shared by every open stream. It runs only while at
 * least one stream listens, takes one sample every interval and hands the same MetricsEvent to
 * each subscriber. Subscribing returns the function that ends the subscription; the count of
 * live subscriptions is public so a test can prove none leaks.
 */
import type { MetricsEvent, PipelineMetrics } from '../gen/svc/v1/engine.js';
import { readProcessStats, type ProcessStats } from '../metrics/process-stats.js';
import type { PipelineRegistry } from '../pipelines/registry.js';

export type MetricsListener = (event: MetricsEvent) => void;

export interface MetricsHubOptions {
  pipelines: Pick<PipelineRegistry, 'entries' | 'size'>;
  intervalMs: number;
  readStats?: (pid: number) => Promise<ProcessStats | undefined>;
  onError?: (error: unknown) => void;
}

interface ChildSample {
  pid: number;
  cpuSeconds: number;
}

export class MetricsHub {
  private readonly listeners = new Set<MetricsListener>();
  private timer: NodeJS.Timeout | undefined;
  private sampling = false;
  private lastCpu = process.cpuUsage();
  private lastAt = process.hrtime.bigint();
  private lastChildren = new Map<string, ChildSample>();
  private readonly readStats: (pid: number) => Promise<ProcessStats | undefined>;

  constructor(private readonly options: MetricsHubOptions) {
    this.readStats = options.readStats ?? readProcessStats;
  }

  /** Live subscriptions (open streams). */
  get subscriptions(): number {
    return this.listeners.size;
  }

  /** True while the sampling timer runs (only with at least one subscriber). */
  get running(): boolean {
    return this.timer !== undefined;
  }

  /** Adds a listener; the returned function removes it (calling it again does nothing). */
  subscribe(listener: MetricsListener): () => void {
    this.listeners.add(listener);
    if (this.timer === undefined) {
      this.lastCpu = process.cpuUsage();
      this.lastAt = process.hrtime.bigint();
      this.timer = setInterval(() => this.tick(), this.options.intervalMs);
    }
    let subscribed = true;
    return () => {
      if (!subscribed) return;
      subscribed = false;
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stop();
    };
  }

  /** Drops every listener and stops sampling. */
  close(): void {
    this.listeners.clear();
    this.stop();
  }

  private stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
    this.lastChildren.clear();
  }

  private tick(): void {
    if (this.sampling) return; // the previous sample is still being read: skip this beat
    this.sampling = true;
    this.sample()
      .then((event) => {
        for (const listener of [...this.listeners]) listener(event);
      })
      .catch((error: unknown) => this.options.onError?.(error))
      .finally(() => {
        this.sampling = false;
      });
  }

  /** One sample now: engine CPU since the previous sample, memory and every pipeline. */
  async sample(): Promise<MetricsEvent> {
    const now = process.hrtime.bigint();
    const elapsedS = Number(now - this.lastAt) / 1e9;
    const cpu = process.cpuUsage(this.lastCpu);
    this.lastCpu = process.cpuUsage();
    this.lastAt = now;
    const cpuPercent = elapsedS > 0 ? ((cpu.user + cpu.system) / 1e6 / elapsedS) * 100 : 0;

    const entries = [...this.options.pipelines.entries()];
    const children = new Map<string, ChildSample>();
    const pipelines = await Promise.all(
      entries.map(async ({ record, supervisor }): Promise<PipelineMetrics> => {
        const runtime = supervisor.snapshot();
        const entry: PipelineMetrics = { id: record.id, state: runtime.state, restarts: runtime.restarts };
        const pid = supervisor.pid;
        const stats = pid === undefined ? undefined : await this.readStats(pid);
        if (pid !== undefined && stats !== undefined) {
          entry.child_cpu_seconds = stats.cpuSeconds;
          entry.child_rss_bytes = stats.residentBytes;
          const before = this.lastChildren.get(record.id);
          if (before?.pid === pid && elapsedS > 0) {
            entry.child_cpu_percent = (Math.max(0, stats.cpuSeconds - before.cpuSeconds) / elapsedS) * 100;
          }
          children.set(record.id, { pid, cpuSeconds: stats.cpuSeconds });
        }
        return entry;
      }),
    );
    this.lastChildren = children;
    return {
      cpu_percent: Math.round(cpuPercent * 100) / 100,
      active_pipelines: this.options.pipelines.size,
      memory_rss_bytes: process.memoryUsage.rss(),
      pipelines,
      time: new Date().toISOString(),
      interval_ms: this.options.intervalMs,
    };
  }
}
