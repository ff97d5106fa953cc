/**
 * Where a supervisor's timers come from: the real ones (REAL_TIMERS), or a test's own clock that
 * advances only when the test says so (test/helpers/fake-clock.ts). None keeps the process alive.
 */

/** A pending timer or interval. */
export interface Timer {
  cancel(): void;
}

export interface Timers {
  /** Calls `fn` once after `ms`. */
  after(ms: number, fn: () => void): Timer;
  /** Calls `fn` every `ms` until cancelled. */
  every(ms: number, fn: () => void): Timer;
}

export const REAL_TIMERS: Timers = {
  after(ms, fn) {
    const handle = setTimeout(fn, ms);
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  },
  every(ms, fn) {
    const handle = setInterval(fn, ms);
    handle.unref();
    return { cancel: () => clearInterval(handle) };
  },
};
