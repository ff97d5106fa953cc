/**
 * The engine's view of its host's CPU: samples /proc/stat and each admitted child's
 * /proc/PID/stat once a second, keeps a window of the last few seconds, learns what each graph
 * shape costs from pipelines that are receiving, and answers the three questions the rest of the
 * engine asks: may this pipeline start (admit), is the host overloaded (overload), is this
 * pipeline real time (pipeline). The arithmetic is in model.ts; docs/capacity.md explains it.
 */
import type { Logger } from 'pino';
import { CapacityError } from '../errors.js';
import type { Priority } from '../spec/schema.js';
import {
  BEHIND_RATIO,
  CostBook,
  decide,
  describeLoad,
  graphShape,
  headroomPct,
  isOverloaded,
  niceIncrement,
  realTimeRatio,
  type CostedGraph,
  type HostLoad,
  type ShapeCost,
} from './model.js';
import type { HostTimes } from './proc-stat.js';

/** What the sampler reads of an admitted pipeline's supervisor (the current child and its statistics). */
export interface MeasuredChild {
  readonly pid: number | undefined;
  readonly stats: {
    /** `runningTimeNs`: the child's own running time of `output.packets` (its pipelinestats message). */
    transport?: { srt?: { connected: boolean }; output?: { packets: number }; runningTimeNs?: number } | undefined;
    /** The clock bridge's last report: silence it inserted while the input was late (cumulative over the child), s. */
    clock?: { insertedSilenceSeconds: number } | undefined;
    /** When the child's last statistics message arrived (ms, the engine's clock): the time of `output.packets` without `runningTimeNs`. */
    lastProgressAt?: number | undefined;
  };
}

export interface HostCapacityOptions {
  /** cores × 100 */
  capacityPct: number;
  reservePercent: number;
  normalNice: number;
  log: Logger;
  readHost: () => Promise<HostTimes | undefined>;
  readProcess: (pid: number) => Promise<number | undefined>;
  /** Monotonic clock, ms. */
  now: () => number;
  /** Sampling period, ms (1000). */
  tickMs: number;
  /** Intervals in a window (5: a 5 s window). */
  windowTicks: number;
}

/** How long a refused caller should wait before trying again, s (REST Retry-After). */
export const RETRY_AFTER_S = 10;

interface Interval {
  /** Wall time of the interval (for CPU). */
  dtS: number;
  cpuS: number;
  /** Output packets between the statistics messages last seen at either end, and their time apart. */
  packets: number;
  packetsDtS: number;
  receiving: boolean;
  /** Silence the output carried while its input had audio (late), s: not real time, whatever the packets say. */
  silenceS: number;
}

interface Lease {
  id: string;
  shape: string;
  graph: CostedGraph;
  child: MeasuredChild | undefined;
  prev: { at: number; pid: number | undefined; cpuS: number | undefined; stats: object | undefined; packets: number | undefined; packetsAt: number | undefined; packetsClock: 'child' | 'engine'; silenceS: number } | undefined;
  window: Interval[];
  /** Intervals since the shape last learned from this pipeline. */
  fresh: number;
}

/** Per-pipeline figures for views and metrics. */
export interface PipelineCapacity {
  /** Output packets per second of host time / 1000 over the window while receiving; null before. */
  realtime_ratio: number | null;
  /** Receiving and below 0.98 of real time. */
  behind: boolean;
}

/** `/health` figures while the host is overloaded. CPU in cores. */
export interface OverloadReport {
  since: string;
  message: string;
  headroom_ratio: number;
  capacity_cores: number;
  reserve_cores: number;
  other_programs_cores: number;
  admitted_cores: number;
  children_cores: number;
  /** Pipelines (and stations, `station:<id>`) receiving and not real time. */
  pipelines_behind: string[];
}

export class HostCapacity {
  readonly book = new CostBook();
  private readonly leases = new Map<string, Lease>();
  private host: { prev: { at: number; times: HostTimes } | undefined; window: { dtS: number; busyS: number; childrenS: number }[] } = { prev: undefined, window: [] };
  private measuredHost = false;
  private timer: NodeJS.Timeout | undefined;
  private overloadedSince: number | undefined;
  private ticking: Promise<void> | undefined;
  private firstInterval: Promise<void> | undefined;

  constructor(private readonly options: HostCapacityOptions) {}

  start(): void {
    if (this.timer !== undefined) return;
    this.firstInterval = this.tick().then(() => new Promise((resolve) => setTimeout(resolve, Math.min(500, this.options.tickMs)))).then(() => this.tick());
    this.timer = setInterval(() => void this.tick(), this.options.tickMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Resolves once the host has been measured over one interval (before restored pipelines start). */
  async measured(): Promise<void> {
    await this.firstInterval;
  }

  niceIncrement(priority: Priority): number {
    return niceIncrement(priority, this.options.normalNice);
  }

  /**
   * Admits a pipeline (or station) at the full cost of its shape, or throws CapacityError naming
   * the headroom and the cost, or, on a host busy near its capacity, the admitted pipelines that
   * are behind real time (model.ts decide). Nothing else changes on refusal.
   */
  admit(id: string, graph: CostedGraph, code: 'HOST_AT_CAPACITY' | 'STATION_AT_CAPACITY' = 'HOST_AT_CAPACITY'): void {
    this.admitAs(id, graph, code, true);
  }

  /** `gate`: refused also while admitted pipelines are behind on a busy host (not for a change to one of them). */
  private admitAs(id: string, graph: CostedGraph, code: 'HOST_AT_CAPACITY' | 'STATION_AT_CAPACITY', gate: boolean): void {
    if (this.leases.has(id)) return;
    const { cost, decision } = this.fit(id, graph, gate);
    if (!decision.admit) {
      this.options.log.warn(
        { event: 'admission-refused', pipeline_id: id, shape: cost.shape, cost_percent: round(cost.costPct), headroom_percent: round(decision.headroomPct) },
        `${id}: refused: ${decision.reason}`,
      );
      throw new CapacityError(`not enough CPU for ${id.startsWith('station:') ? 'this station' : 'a new pipeline'}: ${decision.reason}`, RETRY_AFTER_S, code);
    }
  }

  /**
   * A change that restarts an admitted pipeline with another graph: admitted at the new shape's
   * cost in place of its old one, or CapacityError with the old admission kept (nothing changes).
   */
  readmit(id: string, graph: CostedGraph, code: 'HOST_AT_CAPACITY' | 'STATION_AT_CAPACITY' = 'HOST_AT_CAPACITY'): void {
    const old = this.leases.get(id);
    if (old === undefined) return this.admit(id, graph, code);
    if (graphShape(graph) === old.shape) return undefined;
    this.leases.delete(id);
    try {
      // a change to a pipeline already on air is not held back by the others behind: it is
      // admitted by its cost alone (its own lease back on refusal)
      this.admitAs(id, graph, code, false);
    } catch (error) {
      this.leases.set(id, old);
      throw error;
    }
    const lease = this.leases.get(id);
    if (lease !== undefined) lease.child = old.child;
    return undefined;
  }

  /** Admits the pipeline when it fits (true), quietly (a waiting pipeline is tried again and again). */
  tryAdmit(id: string, graph: CostedGraph): boolean {
    return this.leases.has(id) || this.fit(id, graph, true).decision.admit;
  }

  /** The admitted pipelines (and stations) receiving and not real time over the window. */
  private behind(): string[] {
    return [...this.leases.keys()].filter((id) => this.pipeline(id).behind);
  }

  /**
   * Decides whether the pipeline fits at its shape's cost (and, with `gate`, whether the host
   * carries what it has), and when it does, holds its lease.
   */
  private fit(id: string, graph: CostedGraph, gate: boolean): { cost: ShapeCost; decision: ReturnType<typeof decide> } {
    const cost = this.book.cost(graph);
    const decision = decide(this.load(), cost, gate ? this.behind() : []);
    if (decision.admit) this.leases.set(id, { id, shape: cost.shape, graph: { processing: graph.processing, backup: graph.backup }, child: undefined, prev: undefined, window: [], fresh: 0 });
    return { cost, decision };
  }

  /** The admitted pipeline's supervisor, measured from now on. */
  attach(id: string, child: MeasuredChild): void {
    const lease = this.leases.get(id);
    if (lease !== undefined) lease.child = child;
  }

  release(id: string): void {
    this.leases.delete(id);
  }

  /** The host over the last window, with every admitted pipeline at its full cost. */
  load(): HostLoad {
    const w = this.host.window;
    const dtS = w.reduce((a, x) => a + x.dtS, 0);
    const busyS = w.reduce((a, x) => a + x.busyS, 0);
    const childrenS = w.reduce((a, x) => a + x.childrenS, 0);
    let committedPct = 0;
    for (const lease of this.leases.values()) committedPct += this.book.cost(lease.graph).costPct;
    return {
      capacityPct: this.options.capacityPct,
      reservePct: (this.options.capacityPct * this.options.reservePercent) / 100,
      othersPct: dtS > 0 ? Math.max(0, (100 * (busyS - childrenS)) / dtS) : 0,
      childrenPct: dtS > 0 ? (100 * childrenS) / dtS : 0,
      committedPct,
      measured: this.measuredHost && dtS > 0,
    };
  }

  /** Headroom as a fraction of the capacity (negative when overloaded). */
  headroomRatio(): number {
    return headroomPct(this.load()) / this.options.capacityPct;
  }

  pipeline(id: string): PipelineCapacity {
    const lease = this.leases.get(id);
    if (lease === undefined) return { realtime_ratio: null, behind: false };
    const receiving = lease.window.filter((x) => x.receiving);
    const dtS = receiving.reduce((a, x) => a + x.packetsDtS, 0);
    if (dtS < 2 || lease.window.at(-1)?.receiving !== true) return { realtime_ratio: null, behind: false };
    const ratio = realTimeRatio(receiving.reduce((a, x) => a + x.packets, 0), dtS) ?? 0;
    // Real time is judged by the audio: every packet on time is not enough when some of them
    // carried silence the input had audio for.
    const silent = receiving.some((x) => x.silenceS > 0);
    return { realtime_ratio: Math.round(ratio * 1000) / 1000, behind: ratio < BEHIND_RATIO || silent };
  }

  /** The cost the engine counts for one admitted pipeline now. */
  cost(id: string): ShapeCost | undefined {
    const lease = this.leases.get(id);
    return lease === undefined ? undefined : this.book.cost(lease.graph);
  }

  overloaded(): boolean {
    return this.overloadedSince !== undefined;
  }

  overload(): OverloadReport | undefined {
    if (this.overloadedSince === undefined) return undefined;
    const load = this.load();
    const behind = this.behind();
    const cores = (x: number): number => Math.round(x) / 100;
    // Rounded down, so that an overload never reads as a headroom of 0 (rounded to 3 decimals, a
    // headroom between 0 and -0.1 % of a core came out as -0: "headroom_ratio 0" while
    // overloaded, in a CI rehearsal).
    const headroom = headroomPct(load);
    return {
      since: new Date(Date.now() - (this.options.now() - this.overloadedSince)).toISOString(),
      message: `the host cannot carry its admitted pipelines within the reserve: headroom ${(Math.floor(headroom) / 100).toFixed(2)} cores; ` +
        `${describeLoad(load)}; ${behind.length} pipeline(s) behind real time`,
      headroom_ratio: Math.floor((headroom / load.capacityPct) * 1000) / 1000,
      capacity_cores: cores(load.capacityPct),
      reserve_cores: cores(load.reservePct),
      other_programs_cores: cores(load.othersPct),
      admitted_cores: cores(load.committedPct),
      children_cores: cores(load.childrenPct),
      pipelines_behind: behind,
    };
  }

  /** One sample (serialized: a slow /proc read never overlaps the next). */
  tick(): Promise<void> {
    this.ticking ??= this.sample().finally(() => {
      this.ticking = undefined;
    });
    return this.ticking;
  }

  private async sample(): Promise<void> {
    const times = await this.options.readHost();
    const at = this.options.now();
    const leases = [...this.leases.values()];
    const reads = await Promise.all(leases.map(async (lease) => {
      const pid = lease.child?.pid;
      return pid === undefined ? undefined : this.options.readProcess(pid);
    }));
    let childrenS = 0;
    leases.forEach((lease, i) => {
      childrenS += this.samplePipeline(lease, at, reads[i]);
    });
    if (times === undefined) {
      if (this.measuredHost || this.host.prev === undefined) {
        this.options.log.warn({ event: 'host-cpu-unmeasured' }, 'cannot read /proc/stat: admission counts only the admitted pipelines against the capacity');
      }
      this.measuredHost = false;
      this.host.prev = { at, times: { totalS: 0, idleS: 0, cpus: 1 } };
      return;
    }
    const prev = this.host.prev;
    this.host.prev = { at, times };
    this.measuredHost = true;
    if (prev === undefined || prev.times.totalS === 0) return;
    // Over the engine's clock: the CPUs' time less their idle time. /proc/stat's busy fields are
    // counted in scheduler ticks, which on the busy 2-core VM came at 0.58-1.50 times the clock
    // over a second (bench/host-ticks.ts; idle time is kept exactly, and the children's CPU
    // too): by the ticks, the children read up to 1.7 times what they used (docs/capacity.md).
    const dtS = (at - prev.at) / 1000;
    if (dtS <= 0) return;
    const idleS = times.idleS - prev.times.idleS;
    const busyS = Math.min(times.cpus * dtS, Math.max(0, times.cpus * dtS - idleS));
    this.host.window.push({ dtS, busyS, childrenS });
    if (this.host.window.length > this.options.windowTicks) this.host.window.shift();
    this.judgeOverload(at);
  }

  /** Adds one interval to the pipeline's window; returns the CPU seconds its child used in it. */
  private samplePipeline(lease: Lease, at: number, cpuS: number | undefined): number {
    const child = lease.child;
    const pid = child?.pid;
    const stats = child?.stats;
    const packets = stats?.transport?.output?.packets;
    // The time of the counts: the child's own running time when its message carries one, so
    // statistics the engine receives late or in bursts do not make a real-time child look
    // behind (or ahead); else when the engine received them.
    const childNs = stats?.transport?.runningTimeNs;
    const packetsAt = childNs !== undefined ? childNs / 1e6 : stats?.lastProgressAt;
    const packetsClock = childNs !== undefined ? 'child' : 'engine';
    const silenceS = stats?.clock?.insertedSilenceSeconds ?? 0;
    const prev = lease.prev;
    lease.prev = { at, pid, cpuS, stats, packets, packetsAt, packetsClock, silenceS };
    if (pid === undefined || cpuS === undefined) return 0;
    // A child started since the last sample used all of its CPU time in this interval.
    const sameChild = prev !== undefined && prev.pid === pid && prev.cpuS !== undefined;
    const usedS = sameChild ? Math.max(0, cpuS - (prev.cpuS ?? 0)) : cpuS;
    if (!sameChild || prev.stats !== stats || prev.packets === undefined || packets === undefined || prev.packetsAt === undefined || packetsAt === undefined ||
      prev.packetsClock !== packetsClock) {
      lease.window = [];
      lease.fresh = 0;
      return usedS;
    }
    lease.window.push({
      dtS: (at - prev.at) / 1000,
      cpuS: usedS,
      packets: Math.max(0, packets - prev.packets),
      packetsDtS: Math.max(0, packetsAt - prev.packetsAt) / 1000,
      receiving: stats?.transport?.srt?.connected === true,
      silenceS: Math.max(0, silenceS - prev.silenceS),
    });
    if (lease.window.length > this.options.windowTicks) lease.window.shift();
    lease.fresh += 1;
    this.learnFrom(lease);
    return usedS;
  }

  /** A full window of receiving in real time on a host that is not overloaded teaches the shape's cost. */
  private learnFrom(lease: Lease): void {
    if (lease.fresh < this.options.windowTicks || this.overloadedSince !== undefined) return;
    if (lease.window.length < this.options.windowTicks || !lease.window.every((x) => x.receiving)) return;
    const dtS = lease.window.reduce((a, x) => a + x.dtS, 0);
    const packetsDtS = lease.window.reduce((a, x) => a + x.packetsDtS, 0);
    const ratio = realTimeRatio(lease.window.reduce((a, x) => a + x.packets, 0), packetsDtS) ?? 0;
    if (ratio < BEHIND_RATIO || lease.window.some((x) => x.silenceS > 0)) return;
    this.book.learn(lease.shape, (100 * lease.window.reduce((a, x) => a + x.cpuS, 0)) / dtS);
    lease.fresh = 0;
  }

  private judgeOverload(at: number): void {
    const load = this.load();
    const over = isOverloaded(load);
    if (over && this.overloadedSince === undefined) {
      this.overloadedSince = at;
      this.options.log.warn(
        { event: 'overloaded', headroom_percent: round(headroomPct(load)), others_percent: round(load.othersPct), admitted_percent: round(load.committedPct) },
        `host overloaded: ${describeLoad(load)}; children are reported, not restarted, while they post statistics`,
      );
    } else if (!over && this.overloadedSince !== undefined) {
      this.overloadedSince = undefined;
      this.options.log.info({ event: 'overload-cleared', headroom_percent: round(headroomPct(load)) }, `host no longer overloaded: ${describeLoad(load)}`);
    }
  }
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}
