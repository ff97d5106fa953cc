/**
 * The child state machine of one pipeline. Desired state (what the engine wants: run or stop)
 * is kept apart from the observed state (what the child is doing). Pure: the supervisor feeds it
 * events and acts on the result.
 *
 *   stopped ──hold──▶ pending ──spawn──▶ starting (loaded before the engine can start children)
 *   starting ──ready──▶ running
 *   starting/running ──exit──▶ exited ──▶ starting (clean end: at once)
 *                                     ──timer──▶ starting (no audio from the source: soon, spaced)
 *                                     ──▶ backoff ──timer──▶ starting (failure)
 *                                     ──▶ failed (the description can never run)
 *   any ──stop──▶ stopping ──exit──▶ stopped
 */
import type { ExitClass } from './exit.js';

export type ChildState = 'pending' | 'starting' | 'running' | 'exited' | 'backoff' | 'failed' | 'stopping' | 'stopped';
export type Desired = 'run' | 'stop';

export type ChildEvent =
  /** Wanted, but its first child must wait (the engine's GStreamer check is still running). */
  | { type: 'hold' }
  | { type: 'spawn' }
  | { type: 'ready' }
  | { type: 'exit'; class: ExitClass; ranMs: number }
  | { type: 'retry-due' }
  | { type: 'stop' };

/** What the supervisor must do after a transition. */
export type Action =
  | { do: 'none' }
  | { do: 'spawn' }
  | { do: 'schedule-retry' }
  /** Start the next child after `afterMs` without back-off (the source sent nothing). */
  | { do: 'schedule-restart'; afterMs: number }
  | { do: 'signal-stop' }
  | { do: 'cancel-retry' };

export interface Transition {
  state: ChildState;
  action: Action;
}

/** A clean exit this soon after start is treated as a failure, so an instant EOS cannot spin. */
export const MIN_CLEAN_RUN_MS = 1000;

/**
 * Children started after a source that sent no audio are at least this far apart, so a source
 * that connects and leaves again and again cannot make the engine spin.
 */
export const NO_DATA_RESTART_SPACING_MS = 1000;

/** How long after a child started, ran `ranMs` and ended without audio the next one starts. */
export function noDataRestartDelay(ranMs: number): number {
  return Math.max(0, NO_DATA_RESTART_SPACING_MS - Math.max(0, ranMs));
}

export function transition(state: ChildState, desired: Desired, event: ChildEvent): Transition {
  const none: Action = { do: 'none' };
  switch (event.type) {
    case 'hold':
      return desired === 'run' && state === 'stopped' ? { state: 'pending', action: none } : { state, action: none };
    case 'spawn':
      if (desired === 'run' && (state === 'pending' || state === 'stopped' || state === 'exited' || state === 'backoff')) {
        return { state: 'starting', action: { do: 'spawn' } };
      }
      return { state, action: none };
    case 'ready':
      return state === 'starting' ? { state: 'running', action: none } : { state, action: none };
    case 'exit': {
      if (desired === 'stop' || state === 'stopping' || state === 'pending') return { state: 'stopped', action: none };
      const cls = event.class;
      switch (cls.kind) {
        case 'permanent':
          return { state: 'failed', action: none };
        case 'clean':
          return event.ranMs >= MIN_CLEAN_RUN_MS
            ? { state: 'exited', action: { do: 'spawn' } }
            : { state: 'backoff', action: { do: 'schedule-retry' } };
        case 'no-data':
          return { state: 'exited', action: { do: 'schedule-restart', afterMs: noDataRestartDelay(event.ranMs) } };
        case 'retry':
          return { state: 'backoff', action: { do: 'schedule-retry' } };
        default: {
          const unknown: never = cls;
          throw new Error(`unknown exit class ${JSON.stringify(unknown)}`);
        }
      }
    }
    case 'retry-due':
      return (state === 'backoff' || state === 'exited') && desired === 'run'
        ? { state: 'starting', action: { do: 'spawn' } }
        : { state, action: none };
    case 'stop':
      switch (state) {
        case 'starting':
        case 'running':
          return { state: 'stopping', action: { do: 'signal-stop' } };
        case 'backoff':
        case 'exited':
          return { state: 'stopped', action: { do: 'cancel-retry' } };
        case 'pending':
        case 'failed':
        case 'stopped':
          return { state: 'stopped', action: none };
        case 'stopping':
          return { state, action: none };
        default: {
          const unknown: never = state;
          throw new Error(`unknown state ${String(unknown)}`);
        }
      }
    default: {
      const unknown: never = event;
      throw new Error(`unknown event ${JSON.stringify(unknown)}`);
    }
  }
}
