/**
 * The stall watchdog's verdict, one tick at a time (the supervisor ticks it every statistics
 * period): a running child that posts no statistics for `stallAfterMs` (OVERLOAD_STALL_FACTOR times
 * that while the host is overloaded) is stalled and killed.
 *
 * Silence is judged only on a tick that came on time. A tick late by more than a period means the
 * engine itself was held up (a busy host runs the pipelines' real-time threads first): the lines
 * the child wrote meanwhile are still unread in its pipe, and Node runs a late timer before it
 * reads them, and judged then a child that is fine looks silent. (With 24 pipelines and their
 * senders on 2 cores the watchdog killed children "no statistics for 6.7 s" while the engine
 * itself was short of CPU; whether those children or the engine were the late ones was not
 * recorded.) The tick after, the pipe has been read.
 */

/** How much longer the watchdog waits for statistics while the host is overloaded (capacity/). */
export const OVERLOAD_STALL_FACTOR = 6;

export interface WatchdogTick {
  /** now, ms (the supervisor's clock) */
  now: number;
  /** the previous tick's `now` (or when the watchdog started) */
  previousTick: number;
  /** the tick period, ms */
  periodMs: number;
  /** the child's last statistics (or when it started running), ms */
  lastProgressAt: number;
  stallAfterMs: number;
  hostOverloaded: boolean;
}

export type WatchdogVerdict =
  | { kind: 'fine' }
  | { kind: 'engine-late'; lateMs: number }
  | { kind: 'stalled'; silentMs: number };

export function watchdogVerdict(tick: WatchdogTick): WatchdogVerdict {
  const lateMs = tick.now - tick.previousTick - tick.periodMs;
  if (lateMs > tick.periodMs) return { kind: 'engine-late', lateMs };
  const silentMs = tick.now - tick.lastProgressAt;
  const bound = tick.stallAfterMs * (tick.hostOverloaded ? OVERLOAD_STALL_FACTOR : 1);
  return silentMs < bound ? { kind: 'fine' } : { kind: 'stalled', silentMs };
}
