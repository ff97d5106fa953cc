// Types of alarms.js (a plain ES module the browser runs) for the TypeScript tests that import it.
import type { Tile } from '../live-feed.js';

export type Severity = 'alarm' | 'warning';
export type AlarmCode =
  | 'failed' | 'restarting' | 'nothing-on-air' | 'input-lost' | 'silence' | 'behind' | 'leg-failed'
  | 'on-backup' | 'on-fallback' | 'backup-lost' | 'latency' | 'stale' | 'waiting-capacity' | 'ptp';

export interface Alarm {
  code: AlarmCode;
  severity: Severity;
  text: string;
  since_ms: number | null;
}

export interface Row {
  key: string;
  name: string;
  alarms: Alarm[];
  onset: number | null;
}

export const STALE_MS: number;
export const ALARMS: Record<AlarmCode, { severity: Severity; label: string }>;
export function alarmsOf(tile: Pick<Tile, 'view' | 'failover' | 'stats_age_ms'>, context: { now: number; frameAge?: number; silenceAlertS?: number }): Alarm[];
export function hostAlarms(host?: { ptp?: { state: string; reason?: string } | null }): Alarm[];
export function severityOf(alarms: readonly Alarm[]): Severity | 'ok';
export const LATCH_MS: number;
export function trackOnsets(onsets: Map<string, { at: number; endedAt: number | null }>, key: string, alarms: readonly Alarm[], now: number): number | null;
export function sortRows<R extends Row>(rows: readonly R[]): R[];
export function filterRows<R extends Row>(rows: readonly R[], filter?: { text?: string; alarm?: string }): R[];
export function countAlarms(rows: readonly Row[]): { alarm: number; warning: number; total: number };
