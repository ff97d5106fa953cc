/**
 * Each switch of the clock bridge between inputs (its `failover` message) as an operator reads it
 * in the log: from, to, why, and the figures that made it (docs/failover.md).
 */
import type { FailoverEvent } from './parse-line.js';

export interface FailoverReport {
  from: FailoverEvent['from'];
  to: FailoverEvent['to'];
  reason: FailoverEvent['reason'];
  /** Short-term levels, dBFS; null for no audio. */
  main_level_dbfs: number | null;
  backup_level_dbfs: number | null;
  main_silent_seconds: number;
  backup_silent_seconds: number;
  /** How long the input left had no audio, ms. */
  lost_ms: number;
}

const level = (db: number): number | null => (Number.isFinite(db) && db > -199 ? Math.round(db * 10) / 10 : null);
const tenths = (s: number): number => (Number.isFinite(s) ? Math.round(s * 10) / 10 : 0);

export function failoverReport(event: FailoverEvent): FailoverReport {
  return {
    from: event.from,
    to: event.to,
    reason: event.reason,
    main_level_dbfs: level(event.mainLevelDb),
    backup_level_dbfs: level(event.backupLevelDb),
    main_silent_seconds: tenths(event.mainSilentSeconds),
    backup_silent_seconds: tenths(event.backupSilentSeconds),
    lost_ms: Number.isFinite(event.lostSeconds) ? Math.round(event.lostSeconds * 1000) : 0,
  };
}

const WHY: Record<FailoverEvent['reason'], (r: FailoverReport) => string> = {
  loss: (r) => `${r.from} delivered no audio for ${r.lost_ms} ms`,
  silence: (r) => `${r.from} silent for ${r.from === 'backup' ? r.backup_silent_seconds : r.main_silent_seconds} s`,
  return: (r) => `${r.to} back and healthy`,
  manual: () => 'selected by an operator',
};

/** The log line's text for a switch. */
export function describeFailover(r: FailoverReport): string {
  return `on air: ${r.to} (was ${r.from}): ${WHY[r.reason](r)}`;
}
