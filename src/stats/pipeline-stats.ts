/**
 * What is known about one pipeline's audio and transport, from its child's statistics events.
 * Pure: the caller passes the clock. Replaced with a fresh one for every new child.
 */
import type { LevelEvent, LoudnessEvent, PipelineStatsEvent, StatsEvent } from './parse-line.js';

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

export class PipelineStats {
  level: LevelEvent | undefined;
  levelAt: number | undefined;
  readonly loudness = new Map<string, LoudnessEvent>();
  transport: PipelineStatsEvent | undefined;
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
      case 'pipelinestats':
        this.transport = event;
        this.lastProgressAt = now;
        break;
      case 'srtaccess': // logged by the supervisor (stats/srt-callers.ts), no state here
      case 'enginecontrol': // answers the supervisor's control channel (supervisor/control-channel.ts)
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

  report(now: number): InputReport {
    const connected = this.transport?.srt?.connected ?? false;
    const silence = this.silenceSeconds(now);
    const state: InputState = !connected ? 'waiting' : silence * 1000 >= SILENCE_REPORT_MS ? 'silent' : 'receiving';
    return { input_state: state, silence_seconds: Math.round(silence * 10) / 10, srt_connected: connected };
  }
}
