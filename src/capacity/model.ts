/**
 * The capacity model, pure: what a pipeline costs by the shape of its graph, how much room the
 * host has, whether one more pipeline fits, and how a child's niceness follows its priority.
 * CPU is in percent of one core throughout (100 = one core busy). docs/capacity.md.
 */
import type { PipelineSpec, Priority, ProcessingStep } from '../spec/schema.js';

/**
 * What a pipeline's CPU depends on: its steps, and whether it has a backup SRT input (a second
 * srtsrc, decode and clock-bridge core, running all the time: hot standby). A pipeline or
 * station spec is one.
 */
export interface CostedGraph {
  readonly processing: readonly ProcessingStep[];
  readonly backup?: PipelineSpec['backup'];
}

/** The shape suffix of a graph with a backup input. */
export const BACKUP_SHAPE = '+backup';

/**
 * The graph's shape as far as CPU goes: the ordered step plugins, an eq with its band count
 * (`loudness-normalize>eq:3`); `-` for a graph without steps; `+backup` after either when it has
 * a backup input (`-+backup`, `eq:3+backup`). Main input and output are the same for every
 * pipeline (SRT in, decode, resample, RTP L24 out). A fallback file costs nothing until it plays
 * (mapped, read only on air), so it is not part of the shape.
 */
export function graphShape(graph: CostedGraph): string {
  const steps = graph.processing.length === 0
    ? '-'
    : graph.processing.map((step) => (step.plugin === 'eq' ? `eq:${step.bands.length}` : step.plugin)).join('>');
  return graph.backup === undefined ? steps : `${steps}${BACKUP_SHAPE}`;
}

/**
 * The built-in estimate, used until a pipeline of the shape has been measured while receiving.
 * Calibrated with `npm run bench -- --only scale --admission` (docs/capacity.md) on a 2-core
 * x86-64 VM: SRT + AAC decode + resample + RTP L24 out with rtp_packets_per_send 4, then each step.
 * Deliberately on the high side: an over-estimate refuses a little early, an under-estimate lets
 * one pipeline too many in.
 */
export const BUILTIN_COST = {
  /** srtsrc ! tsdemux ! decodebin ! audioconvert ! audioresample ! ... ! rtpL24pay ! rtpbatch ! udpsink */
  basePct: 3.6,
  loudnessPct: 0.8,
  eqBandPct: 0.1,
  /**
   * A backup input, hot standby: its srtsrc ! tsdemux ! decodebin ! audioconvert ! audioresample
   * and the clock bridge's second FIFO/drift/resampler core, all running whether or not the backup
   * is on air. Measured with `npm run bench -- --only failover` (docs/failover.md#bench): a
   * pipeline with a backup beside the same pipeline without, CPU over the same window, used
   * 1.24x the CPU of the plain one (median of 17 rounds in 4 runs; 1.08-1.34x per run, 0.88-1.66x
   * per round) and 1.6 points of a core more (median of the rounds), where the plain one used
   * 6-10 % on the busy shared 2-core VM (load average 8-22). 1.8: the upper rounds' ratio (1.5x)
   * applied to basePct, and above the median difference; on the high side like the others.
   */
  backupPct: 1.8,
} as const;

export function builtinCost(graph: CostedGraph): number {
  let cost = BUILTIN_COST.basePct + (graph.backup === undefined ? 0 : BUILTIN_COST.backupPct);
  for (const step of graph.processing) {
    cost += step.plugin === 'eq' ? BUILTIN_COST.eqBandPct * step.bands.length : BUILTIN_COST.loudnessPct;
  }
  return cost;
}

export interface ShapeCost {
  shape: string;
  costPct: number;
  /** `measured`: learned from pipelines of this shape while receiving; `built-in`: the estimate. */
  source: 'measured' | 'built-in';
  /** Windows the measured cost is learned from (0 for the built-in estimate). */
  windows: number;
}

/** Weight of a new window in the learned cost (exponential moving average). */
const LEARN_WEIGHT = 0.3;

/** Per-shape costs learned from measured windows; the built-in estimate for the others. */
export class CostBook {
  private readonly learned = new Map<string, { costPct: number; windows: number }>();

  /** One measured window of a pipeline of this shape: receiving, real time, host not overloaded. */
  learn(shape: string, cpuPct: number): void {
    if (!Number.isFinite(cpuPct) || cpuPct <= 0) return;
    const known = this.learned.get(shape);
    this.learned.set(shape, known === undefined
      ? { costPct: cpuPct, windows: 1 }
      : { costPct: known.costPct + LEARN_WEIGHT * (cpuPct - known.costPct), windows: known.windows + 1 });
  }

  cost(graph: CostedGraph): ShapeCost {
    const shape = graphShape(graph);
    const known = this.learned.get(shape);
    return known === undefined
      ? { shape, costPct: builtinCost(graph), source: 'built-in', windows: 0 }
      : { shape, costPct: known.costPct, source: 'measured', windows: known.windows };
  }
}

/** What the host looks like over the last measuring window. */
export interface HostLoad {
  /** The host's CPU capacity (cores × 100). */
  capacityPct: number;
  /** Kept free: engine.cpu_reserve_percent of the capacity. */
  reservePct: number;
  /** CPU used by everything but the engine's children (the engine itself included); 0 when unmeasured. */
  othersPct: number;
  /** Every admitted pipeline and station at its full cost, whether or not audio flows. */
  committedPct: number;
  /** CPU the engine's children used over the window. */
  childrenPct: number;
  /** Whether /proc/stat could be read (othersPct is 0 when not). */
  measured: boolean;
}

/** Room left for new pipelines: capacity less reserve, other programs and every admitted pipeline. */
export function headroomPct(load: HostLoad): number {
  return load.capacityPct - load.reservePct - load.othersPct - load.committedPct;
}

/**
 * Room for a new pipeline: the headroom, with the admitted pipelines counted at what their children
 * used over the window when that was more than their costs. Costs are learned on a host below its
 * limit and each pipeline costs more on a fuller one; what the host did is then the truer figure
 * (with other programs, it is the host's busy time). An unmeasured host has only the costs.
 */
export function admissionRoomPct(load: HostLoad): number {
  return load.capacityPct - load.reservePct - load.othersPct - (usedMore(load) ? load.childrenPct : load.committedPct);
}

/** The host cannot carry what it has admitted within its reserve. */
export function isOverloaded(load: HostLoad): boolean {
  return headroomPct(load) < 0;
}

export interface AdmissionDecision {
  admit: boolean;
  headroomPct: number;
  cost: ShapeCost;
  /** Why not, naming the figures (empty when admitted). */
  reason: string;
}

const pct = (x: number): string => `${x.toFixed(1)} %`;

export function describeLoad(load: HostLoad): string {
  return `capacity ${pct(load.capacityPct)}, reserve ${pct(load.reservePct)}, ` +
    `other programs ${load.measured ? pct(load.othersPct) : 'not measured'}, admitted pipelines ${pct(load.committedPct)}`;
}

/**
 * The host is as busy as its capacity less twice the reserve, or busier (70 % of it at the default
 * reserve of 15 %): a pipeline behind real time then says the host is at its limit, whatever the
 * costs say. Below it a pipeline behind is its own matter (a late contribution link).
 */
export function busyNearCapacity(load: HostLoad): boolean {
  return load.measured && busyPct(load) >= load.capacityPct - 2 * load.reservePct;
}

/** The admitted pipelines' children used more than their costs over the window. */
function usedMore(load: HostLoad): boolean {
  return load.measured && load.childrenPct > load.committedPct;
}

/** What the host did over the window: other programs and the engine's children. */
function busyPct(load: HostLoad): number {
  return load.othersPct + load.childrenPct;
}

/**
 * Whether a pipeline of this cost fits in the room the host has (percent of one core: the
 * headroom, or less when the admitted pipelines used more than their costs), and, when
 * the host is busy near its capacity, whether every admitted pipeline is real time (`behind`: the
 * admitted pipelines that are not). The costs are measured on a host below its limit, and each
 * pipeline costs more on a fuller one; a pipeline behind on a busy host is the host saying it
 * carries no more, which no cost can say first (docs/capacity.md).
 */
export function decide(load: HostLoad, cost: ShapeCost, behind: readonly string[] = []): AdmissionDecision {
  const room = admissionRoomPct(load);
  if (cost.costPct > room) {
    return {
      admit: false,
      headroomPct: room,
      cost,
      reason: `the host has ${pct(Math.max(0, room))} of a core of CPU headroom and a pipeline of shape ${cost.shape} ` +
        `is estimated at ${pct(cost.costPct)} (${cost.source === 'measured' ? `measured over ${cost.windows} window(s)` : 'built-in estimate'}); ` +
        `${describeLoad(load)}${usedMore(load) ? `; the admitted pipelines used ${pct(load.childrenPct)} over the last 5 s, more than their costs, and count at that` : ''}`,
    };
  }
  if (behind.length > 0 && busyNearCapacity(load)) {
    const named = behind.slice(0, 5).join(', ') + (behind.length > 5 ? ` and ${behind.length - 5} more` : '');
    return {
      admit: false,
      headroomPct: room,
      cost,
      reason: `${behind.length} admitted pipeline(s) behind real time (${named}) on a host ${pct(busyPct(load))} busy: ` +
        `it does not carry what it has, though its headroom of ${pct(room)} would fit a pipeline of shape ${cost.shape} ` +
        `estimated at ${pct(cost.costPct)}; ${describeLoad(load)}`,
    };
  }
  return { admit: true, headroomPct: room, cost, reason: '' };
}

/**
 * Niceness added to a child: `high` runs at the engine's own, `normal` at `normalNice` more. An
 * unprivileged process can only raise niceness, so the order is made by lowering the normal ones.
 */
export function niceIncrement(priority: Priority, normalNice: number): number {
  return priority === 'high' ? 0 : normalNice;
}

/** Output packets per second of host time / 1000 (1 ms packets): 1 is real time. */
export function realTimeRatio(packets: number, seconds: number): number | undefined {
  return seconds > 0 ? packets / seconds / 1000 : undefined;
}

/** A receiving pipeline below this real-time ratio is behind. */
export const BEHIND_RATIO = 0.98;
