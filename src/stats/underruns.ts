/**
 * Each clock bridge underrun as an operator reads it in the log: how many, how long the output
 * was silent, and why. Compares two consecutive `clockbridge` reports of one child (cumulative
 * counters, docs/elements-clockbridge.md).
 *
 * - `input-late`: the input came back within 1 s with the audio it owed (the bridge counted the
 *   silence it inserted: a sender or a host that was late, not a caller that stopped).
 * - `input-stopped`: the FIFO ran dry and no audio has come back yet (a caller gone, a stalled
 *   link, a decoder that stopped); the output carries silence until it does.
 */
import type { ClockBridgeEvent } from './parse-line.js';

export type UnderrunCause = 'input-late' | 'input-stopped';

export interface UnderrunReport {
  /** Underrun episodes since the previous report. */
  count: number;
  /** Silence inserted while the input was late, since the previous report, ms. */
  silence_ms: number;
  /** The last such hole, ms. */
  last_ms: number;
  cause: UnderrunCause;
}

/** What happened between `prev` and `next` (the same child); undefined when no underrun began or ended. */
export function underrunBetween(prev: ClockBridgeEvent | undefined, next: ClockBridgeEvent): UnderrunReport | undefined {
  const count = next.underruns - (prev?.underruns ?? 0);
  const silenceS = next.insertedSilenceSeconds - (prev?.insertedSilenceSeconds ?? 0);
  if (!(count > 0) && !(silenceS > 0)) return undefined;
  return {
    count: Math.max(0, count),
    silence_ms: Math.round(Math.max(0, silenceS) * 10_000) / 10,
    last_ms: Math.round(next.lastUnderrunSeconds * 10_000) / 10,
    cause: silenceS > 0 ? 'input-late' : 'input-stopped',
  };
}

/** The log line's text for a report. */
export function describeUnderrun(r: UnderrunReport): string {
  if (r.cause === 'input-late') {
    return `output silent for ${r.silence_ms} ms: the input was late (${r.count} underrun(s); the jitter buffer now keeps more in reserve)`;
  }
  return `jitter buffer ran dry: no input (${r.count} underrun(s)); the output carries silence until audio comes back`;
}
