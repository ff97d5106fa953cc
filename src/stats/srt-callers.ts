/**
 * What the engine log says about the callers of a pipeline's SRT listener (`srtaccess` events):
 * one line per accepted caller; one per refused caller with the cause in words, where a caller
 * that keeps being refused for the same cause is told at most once per `repeatMs`, with the
 * number of attempts in between. Pure: the caller passes the clock.
 */
import type { SrtAccessEvent } from './parse-line.js';

/** libsrt 1.5 reject codes (SRT_REJ_*) the engine words itself. */
export const SRT_REJ_BADSECRET = 1010;
export const SRT_REJ_UNSECURE = 1011;

export interface CallerLogLine {
  level: 'info' | 'warn';
  fields: Record<string, string | number | boolean>;
  text: string;
}

type Rejected = Extract<SrtAccessEvent, { event: 'rejected' }>;

/** Why a caller was refused, for an operator. */
export function rejectionCause(event: Rejected): string {
  if (event.busy) return 'the connected caller is delivering';
  switch (event.rejectCode) {
    case SRT_REJ_BADSECRET:
      return 'wrong passphrase';
    case SRT_REJ_UNSECURE:
      return event.passphrase ? 'the caller sent no passphrase' : 'the caller sent a passphrase, this input has none';
    default:
      return `refused by libsrt: ${event.reason === '' ? `reject code ${event.rejectCode}` : event.reason}`;
  }
}

/** The caller's host without its port (`127.0.0.1:5000` → `127.0.0.1`, `[::1]:5000` → `::1`). */
function hostOf(peer: string | undefined): string {
  if (peer === undefined) return '?';
  const v6 = /^\[(.*)\]:\d+$/.exec(peer);
  if (v6?.[1] !== undefined) return v6[1];
  const colon = peer.lastIndexOf(':');
  return colon === -1 ? peer : peer.slice(0, colon);
}

const MAX_TRACKED = 256;

export class SrtCallerLog {
  /** Per caller host and reject code: when last told, and attempts not told since. */
  private readonly refused = new Map<string, { toldAt: number; untold: number }>();

  constructor(private readonly repeatMs = 10_000) {}

  /** The line to log for this event, or undefined while a repeated refusal is held back. */
  report(event: SrtAccessEvent, now: number): CallerLogLine | undefined {
    const peer = event.peer ?? 'unknown address';
    if (event.event === 'accepted') {
      if (event.replaced) {
        return {
          level: 'info',
          fields: { event: 'srt-caller-accepted', peer, replaced: true },
          text: `SRT caller ${peer} connected in place of a connection that had gone quiet`,
        };
      }
      return { level: 'info', fields: { event: 'srt-caller-accepted', peer }, text: `SRT caller ${peer} connected` };
    }
    const key = `${hostOf(event.peer)} ${event.rejectCode}`;
    const seen = this.refused.get(key);
    if (seen !== undefined && now - seen.toldAt < this.repeatMs) {
      seen.untold += 1;
      return undefined;
    }
    if (seen === undefined && this.refused.size >= MAX_TRACKED) this.prune(now);
    const repeated = seen?.untold ?? 0;
    this.refused.set(key, { toldAt: now, untold: 0 });
    const cause = rejectionCause(event);
    const again = repeated > 0 ? ` (${repeated} more refused since the last report)` : '';
    return {
      level: 'warn',
      fields: { event: 'srt-caller-rejected', peer, cause, reject_code: event.rejectCode, srt_reason: event.reason, busy: event.busy, repeated },
      text: `SRT caller ${peer} refused: ${cause}${again}`,
    };
  }

  private prune(now: number): void {
    for (const [key, entry] of this.refused) {
      if (now - entry.toldAt >= this.repeatMs) this.refused.delete(key);
    }
    if (this.refused.size >= MAX_TRACKED) this.refused.clear();
  }
}
