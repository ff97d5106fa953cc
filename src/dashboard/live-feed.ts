/**
 * What the operator's page shows of each pipeline and station, built from the registry's views
 * and the children's statistics: one `Tile` per supervised thing, refreshed at the meters' rate.
 * Keeps, per pipeline, when each kind of statistics last arrived and a 10-minute history of the
 * short-term loudness. The output packet rate is the child's own (PipelineStats.outputPacketRate:
 * its counts over its running time), not a rate over the times the engine received them.
 */
import type { LevelEvent, LoudnessEvent, PipelineStatsEvent } from '../stats/parse-line.js';
import type { PipelineStats } from '../stats/pipeline-stats.js';

/** One history point per second for ten minutes. */
export const HISTORY_STEP_MS = 1000;
export const HISTORY_POINTS = 600;

export interface LoudnessMeter {
  /** The loudness step's element name (`step0`). */
  step: string;
  /** The step's target, LUFS, and its true-peak ceiling, dBTP. */
  target: number | null;
  ceiling: number | null;
  momentary: number;
  short_term: number;
  integrated: number;
  true_peak: number;
  gain: number;
  input_momentary: number;
  input_short_term: number;
  input_integrated: number;
  input_true_peak: number;
  /** Loudness range of the input, LU (unstable in the first 60 s of measuring). */
  lra: number;
  /** Seconds of programme the integrated figures cover: since the child's start or the last reset. */
  measuring_s: number;
  age_ms: number;
}

export interface LevelMeter {
  rms_db: number[];
  peak_db: number[];
  age_ms: number;
}

export interface TransportView {
  srt: PipelineStatsEvent['srt'] | null;
  /** The clock bridge's fill against the fill it keeps (as buffer_fill_ratio); null without its report. */
  buffer_fill: number | null;
  output_packets_per_s: number | null;
  age_ms: number;
}

/** An input of a pipeline with failover: main, backup, or the fallback file. */
export type InputName = 'main' | 'backup' | 'fallback';

/** One SRT input's figures, as the view's `inputs` has them. */
export interface InputFigures {
  connected: boolean;
  /** Short-term level, dBFS; null without audio. */
  level_dbfs: number | null;
  silent_seconds: number;
}

/** Which input is on air and which the pipeline has (from the view's failover fields). */
export interface FailoverView {
  /** The input on air; `none`: nothing audible on air; null before the child's first report. */
  active_input: InputName | 'none' | null;
  /** `auto` (the policy decides) or the input forced by hand. */
  selection: InputName | 'auto';
  /** The inputs the pipeline has, in this order: main, then backup and fallback when configured. */
  available: InputName[];
  main: InputFigures | null;
  backup: InputFigures | null;
}

export interface Tile {
  kind: 'pipeline' | 'station';
  /** The id the API knows (`pl_...` or the station id). */
  id: string;
  /** The registry's or the station's view, as GET returns it (fields added later come along). */
  view: Record<string, unknown>;
  loudness: LoudnessMeter | null;
  level: LevelMeter | null;
  transport: TransportView | null;
  /** Which input is on air, for a pipeline with a backup or a fallback; null for any other. */
  failover: FailoverView | null;
  /** The newest statistics of any kind, ms ago (null: none from this child yet). */
  stats_age_ms: number | null;
}

/** A supervised thing as the feed reads it: its view, its child's statistics, its id in the API. */
export interface FeedSource {
  kind: 'pipeline' | 'station';
  id: string;
  view: object;
  stats: PipelineStats;
}

interface Seen<T> {
  event: T | undefined;
  at: number | undefined;
}

/** Arrival times of one pipeline's statistics (one PipelineStats per pipeline, over its children). */
class ChildClock {
  readonly level: Seen<LevelEvent> = { event: undefined, at: undefined };
  readonly loudness: Seen<LoudnessEvent> = { event: undefined, at: undefined };
  readonly transport: Seen<PipelineStatsEvent> = { event: undefined, at: undefined };
  firstLoudnessAt: number | undefined;

  observe(stats: PipelineStats, now: number): void {
    if (stats.level !== this.level.event) {
      this.level.event = stats.level;
      this.level.at = stats.levelAt ?? now;
    }
    const loudness = firstLoudness(stats);
    if (loudness !== this.loudness.event) {
      this.loudness.event = loudness;
      this.loudness.at = now;
      this.firstLoudnessAt ??= now;
    }
    if (stats.transport !== this.transport.event) {
      this.transport.event = stats.transport;
      this.transport.at = stats.lastProgressAt ?? now;
    }
  }
}

/** The first loudness step's latest report (the order of the steps is the element order). */
function firstLoudness(stats: PipelineStats): LoudnessEvent | undefined {
  let first: LoudnessEvent | undefined;
  for (const [element, event] of stats.loudness) {
    if (first === undefined || element < first.element) first = event;
  }
  return first;
}

interface LoudnessStep {
  plugin: string;
  target?: number;
  true_peak?: number;
}

function loudnessStep(view: Record<string, unknown>, element: string): LoudnessStep | undefined {
  const index = Number(element.replace(/^step/, ''));
  const processing = view.processing;
  if (!Array.isArray(processing) || !Number.isInteger(index)) return undefined;
  const step: unknown = processing[index];
  return typeof step === 'object' && step !== null ? (step as LoudnessStep) : undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const ACTIVE = new Set<unknown>(['main', 'backup', 'fallback', 'none']);
const SELECTION = new Set<unknown>(['auto', 'main', 'backup', 'fallback']);

function figures(v: unknown): InputFigures | null {
  if (!isObject(v) || typeof v.connected !== 'boolean') return null;
  return {
    connected: v.connected,
    level_dbfs: typeof v.level_dbfs === 'number' && Number.isFinite(v.level_dbfs) ? round(v.level_dbfs) : null,
    silent_seconds: typeof v.silent_seconds === 'number' && Number.isFinite(v.silent_seconds) ? round(v.silent_seconds) : 0,
  };
}

/**
 * The failover part of a pipeline's view (`active_input`, `selection`, `inputs`, and whether it
 * has a `backup` or a `fallback`): null for a pipeline with neither (it has nothing to switch),
 * for a station, and for a view without these fields.
 */
export function failoverView(view: Record<string, unknown>): FailoverView | null {
  const inputs = isObject(view.inputs) ? view.inputs : {};
  const hasBackup = isObject(view.backup) || isObject(inputs.backup);
  const hasFallback = isObject(view.fallback);
  if (!hasBackup && !hasFallback) return null;
  const available: InputName[] = ['main'];
  if (hasBackup) available.push('backup');
  if (hasFallback) available.push('fallback');
  return {
    active_input: ACTIVE.has(view.active_input) ? (view.active_input as InputName | 'none') : null,
    selection: SELECTION.has(view.selection) ? (view.selection as InputName | 'auto') : 'auto',
    available,
    main: figures(inputs.main),
    backup: hasBackup ? figures(inputs.backup) : null,
  };
}

const round = (v: number, digits = 1): number => {
  const f = 10 ** digits;
  return Math.round(v * f) / f;
};
/** -inf and NaN (no signal yet) become a floor the page draws as empty. */
const finite = (v: number, floor = -99): number => (Number.isFinite(v) ? round(v) : floor);

export class LiveFeed {
  private readonly clocks = new WeakMap<PipelineStats, ChildClock>();
  /** Per tile key (`pipeline:<id>`): [time ms, output short-term LUFS or null]. */
  private readonly history = new Map<string, { t: number[]; s: (number | null)[] }>();

  constructor(private readonly sources: () => FeedSource[]) {}

  private clock(stats: PipelineStats): ChildClock {
    let clock = this.clocks.get(stats);
    if (clock === undefined) {
      clock = new ChildClock();
      this.clocks.set(stats, clock);
    }
    return clock;
  }

  /** Every tile as of `now`. */
  tiles(now: number): Tile[] {
    return this.sources().map((source) => this.tile(source, now));
  }

  private tile(source: FeedSource, now: number): Tile {
    const view = source.view as Record<string, unknown>;
    const clock = this.clock(source.stats);
    clock.observe(source.stats, now);
    const ages = [clock.level.at, clock.loudness.at, clock.transport.at].filter((at): at is number => at !== undefined);
    const packetsPerS = source.stats.outputPacketRate();
    return {
      kind: source.kind,
      id: source.id,
      view,
      loudness: this.loudness(view, clock, now),
      level: clock.level.event === undefined || clock.level.at === undefined
        ? null
        : {
            rms_db: clock.level.event.rmsDb.map((v) => finite(v)),
            peak_db: clock.level.event.peakDb.map((v) => finite(v)),
            age_ms: now - clock.level.at,
          },
      transport: clock.transport.event === undefined || clock.transport.at === undefined
        ? null
        : {
            srt: clock.transport.event.srt ?? null,
            buffer_fill: source.stats.bufferFill() ?? null,
            output_packets_per_s: packetsPerS === undefined ? null : Math.round(packetsPerS),
            age_ms: now - clock.transport.at,
          },
      failover: source.kind === 'pipeline' ? failoverView(view) : null,
      stats_age_ms: ages.length === 0 ? null : now - Math.max(...ages),
    };
  }

  private loudness(view: Record<string, unknown>, clock: ChildClock, now: number): LoudnessMeter | null {
    const e = clock.loudness.event;
    if (e === undefined || clock.loudness.at === undefined) return null;
    const step = loudnessStep(view, e.element);
    return {
      step: e.element,
      target: typeof step?.target === 'number' ? step.target : null,
      ceiling: typeof step?.true_peak === 'number' ? step.true_peak : -1,
      momentary: finite(e.outputMomentary),
      short_term: finite(e.outputShortTerm),
      integrated: finite(e.outputIntegrated),
      true_peak: finite(e.outputTruePeak),
      gain: finite(e.gain, 0),
      input_momentary: finite(e.inputMomentary),
      input_short_term: finite(e.inputShortTerm),
      input_integrated: finite(e.inputIntegrated),
      input_true_peak: finite(e.inputTruePeak),
      lra: finite(e.inputLoudnessRange, 0),
      measuring_s: Math.round(e.measuredSeconds ?? (now - (clock.firstLoudnessAt ?? now)) / 1000),
      age_ms: now - clock.loudness.at,
    };
  }

  /** Adds one history point per tile (call every HISTORY_STEP_MS) and forgets tiles that are gone. */
  sample(now: number): void {
    const seen = new Set<string>();
    for (const tile of this.tiles(now)) {
      const key = `${tile.kind}:${tile.id}`;
      seen.add(key);
      let series = this.history.get(key);
      if (series === undefined) {
        series = { t: [], s: [] };
        this.history.set(key, series);
      }
      const fresh = tile.loudness !== null && tile.loudness.age_ms < 2000 && tile.loudness.short_term > -99;
      series.t.push(Math.round(now / 1000));
      series.s.push(fresh && tile.loudness !== null ? tile.loudness.short_term : null);
      if (series.t.length > HISTORY_POINTS) {
        series.t.shift();
        series.s.shift();
      }
    }
    for (const key of this.history.keys()) if (!seen.has(key)) this.history.delete(key);
  }

  /** The last ten minutes of every tile: time in s since the epoch, output short-term LUFS or null. */
  historySnapshot(): Record<string, { t: number[]; s: (number | null)[] }> {
    return Object.fromEntries([...this.history].map(([key, series]) => [key, { t: [...series.t], s: [...series.s] }]));
  }
}
