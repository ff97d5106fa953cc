/**
 * A clock for tests: `now()` and the supervisor's timers (src/supervisor/timers.ts) advance only
 * when the test calls `advance`, which runs every timer that falls due, in time order, and lets
 * the promises they settle run between them. A minute of supervision takes milliseconds.
 */
import type { Timer, Timers } from '../../src/supervisor/timers.js';

interface Pending {
  at: number;
  seq: number;
  fn: () => void;
  /** Interval period, ms; absent: a one-shot timer. */
  every?: number;
  cancelled: boolean;
}

/** Lets every promise chain that is ready run (a few turns of the event loop's immediate phase). */
export async function settle(turns = 5): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}

export class FakeClock implements Timers {
  private time: number;
  private seq = 0;
  private pending: Pending[] = [];

  constructor(start = 1_000_000) {
    this.time = start;
  }

  now = (): number => this.time;

  after(ms: number, fn: () => void): Timer {
    return this.add({ at: this.time + Math.max(0, ms), seq: this.seq++, fn, cancelled: false });
  }

  every(ms: number, fn: () => void): Timer {
    return this.add({ at: this.time + Math.max(1, ms), seq: this.seq++, fn, every: Math.max(1, ms), cancelled: false });
  }

  /** How many timers are pending. */
  get timers(): number {
    return this.pending.filter((p) => !p.cancelled).length;
  }

  /** Moves time forward by `ms`, running each timer when its time comes (at most 100 000 runs). */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (let runs = 0; runs < 100_000; runs++) {
      await settle();
      const next = this.pending.filter((p) => !p.cancelled && p.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (next === undefined) break;
      this.time = next.at;
      if (next.every !== undefined) next.at += next.every;
      else next.cancelled = true;
      next.fn();
    }
    this.time = end;
    this.pending = this.pending.filter((p) => !p.cancelled);
    await settle();
  }

  private add(entry: Pending): Timer {
    this.pending.push(entry);
    return { cancel: () => { entry.cancelled = true; } };
  }
}
