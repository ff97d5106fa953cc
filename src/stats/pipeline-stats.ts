/**
 * What is known about one pipeline's audio and transport, from its child's statistics events.
 * Pure: the caller passes the clock. Replaced with a fresh one for every new child.
 */
import type { ClockBridgeEvent, LevelEvent, LoudnessEvent, PipelineStatsEvent, StatsEvent } from './parse-line.js';

/** Input below this RMS on every channel counts as silence. */
export const SILENCE_DBFS = -60;
/** Silence this long is reported in the pipeline's `input_state`. */
export const SILENCE_REPORT_MS = 5000;

export type InputState = 'waiting' | 'receiving' | 'silent';

export interface InputReport {
  input_state: InputState;
  silence_seconds: number;
  srt_connected: boolean;
}

/** The pipeline's clock bridge as clients see it (REST `clock`, gRPC `Pipeline.clock`). */
export interface ClockReport {
  drift_ppm: number;
  jitter_buffer_seconds: number;
  jitter_target_seconds: number;
  /** The average fill the bridge keeps: the target + the depth of the input's packet saw-tooth. */
  jitter_setpoint_seconds: number;
  underruns: number;
  overruns: number;
  /** Sender-to-RTP estimate: input (SRT) latency + the bridge's latency (docs/clock.md). */
  latency_seconds: number;
}

export class PipelineStats {
  level: LevelEvent | undefined;
  levelAt: number | undefined;
  readonly loudness = new Map<string, LoudnessEvent>();
  transport: PipelineStatsEvent | undefined;
  /** The clock bridge's latest state. */
  clock: ClockBridgeEvent | undefined;
  /** When statistics last arrived (the watchdog's measure of progress). */
  lastProgressAt: number | undefined;
  private silentSince: number | undefined;

  constructor(private readonly intervalMs: number) {}

  apply(event: StatsEvent, now: number): void {
    switch (event.kind) {
      case 'level':
        this.level = event;
        this.levelAt = now;
        break;
      case 'loudnorm':
        this.loudness.set(event.element, event);
        break;
      case 'clockbridge':
        this.clock = event;
        break;
      case 'pipelinestats':
        this.transport = event;
        this.lastProgressAt = now;
        break;
      default: {
        const unknown: never = event;
        throw new Error(`unknown event ${JSON.stringify(unknown)}`);
      }
    }
    this.updateSilence(now);
  }

  /** Audio is flowing and above the silence threshold on some channel. */
  private hasSignal(now: number): boolean {
    const fresh = this.levelAt !== undefined && now - this.levelAt <= 2.5 * this.intervalMs;
    return fresh && (this.level?.rmsDb.some((db) => db >= SILENCE_DBFS) ?? false);
  }

  private updateSilence(now: number): void {
    if (this.hasSignal(now)) this.silentSince = undefined;
    else this.silentSince ??= now;
  }

  silenceSeconds(now: number): number {
    this.updateSilence(now);
    return this.silentSince === undefined ? 0 : (now - this.silentSince) / 1000;
  }

  /**
   * `waiting`: no input reaches the clock bridge (no caller, or a caller that sends nothing
   * decodable) — the output carries silence meanwhile; `silent`: input arrives but has been
   * below the silence threshold for 5 s; `receiving` otherwise. Before the bridge's first report
   * the SRT connection decides.
   */
  report(now: number): InputReport {
    const connected = this.transport?.srt?.connected ?? false;
    const silence = this.silenceSeconds(now);
    const arriving = this.clock?.inputActive ?? connected;
    const state: InputState = !arriving ? 'waiting' : silence * 1000 >= SILENCE_REPORT_MS ? 'silent' : 'receiving';
    return { input_state: state, silence_seconds: Math.round(silence * 10) / 10, srt_connected: connected };
  }

  /** The clock bridge's state; undefined before its first report. `inputLatencyMs`: SRT latency (0 for other inputs). */
  clockReport(inputLatencyMs: number): ClockReport | undefined {
    const c = this.clock;
    if (c === undefined) return undefined;
    return {
      drift_ppm: Math.round(c.driftPpm * 100) / 100,
      jitter_buffer_seconds: Math.round(c.fillSeconds * 1e5) / 1e5,
      jitter_target_seconds: Math.round(c.targetSeconds * 1e5) / 1e5,
      jitter_setpoint_seconds: Math.round(c.setpointSeconds * 1e5) / 1e5,
      underruns: c.underruns,
      overruns: c.overruns,
      latency_seconds: Math.round((inputLatencyMs / 1000 + c.latencySeconds) * 1e5) / 1e5,
    };
  }
}
