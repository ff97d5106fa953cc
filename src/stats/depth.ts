/**
 * The clock bridge's depth above its target as an operator reads it in the log: a line when the
 * setpoint rises more than DEPTH_ALLOWANCE_S above the reserve (engine.jitter_ms), with why, one
 * when it is back within it, and one when the input asked for more than the ceiling
 * (engine.jitter_max_ms) allows. Compares two consecutive `clockbridge` reports of one child
 * (docs/elements-clockbridge.md: `depth`, `ceiling`, `ceiling-hits`, `ceiling-underruns`).
 */
import type { ClockBridgeEvent } from './parse-line.js';

/**
 * The depth a steady input's packets keep above the reserve at rest: half of a sender's 50 ms
 * block (docs/clock.md). Above it the latency is more than SRT latency + jitter_ms + 25 ms.
 */
export const DEPTH_ALLOWANCE_S = 0.025;

export type DepthChange =
  | { state: 'above'; depth_s: number; target_s: number; ceiling_s: number | undefined }
  | { state: 'back'; depth_s: number; target_s: number }
  | { state: 'ceiling'; hits: number; underruns: number; ceiling_s: number | undefined };

const above = (e: ClockBridgeEvent | undefined): boolean => e?.depthSeconds !== undefined && e.depthSeconds > DEPTH_ALLOWANCE_S;
const ms = (s: number): number => Math.round(s * 1000);

/** What changed between `prev` and `next` (the same child): at most one change a report, the ceiling first. */
export function depthBetween(prev: ClockBridgeEvent | undefined, next: ClockBridgeEvent): DepthChange | undefined {
  const hits = (next.ceilingHits ?? 0) - (prev?.ceilingHits ?? 0);
  if (hits > 0) return { state: 'ceiling', hits, underruns: (next.ceilingUnderruns ?? 0) - (prev?.ceilingUnderruns ?? 0), ceiling_s: next.ceilingSeconds };
  if (next.depthSeconds === undefined) return undefined;
  if (above(next) && !above(prev)) return { state: 'above', depth_s: next.depthSeconds, target_s: next.targetSeconds, ceiling_s: next.ceilingSeconds };
  if (!above(next) && above(prev)) return { state: 'back', depth_s: next.depthSeconds, target_s: next.targetSeconds };
  return undefined;
}

/** The log line's text for a change. */
export function describeDepth(c: DepthChange): string {
  const ceiling = (s: number | undefined): string => (s === undefined ? '' : `, ceiling ${ms(s)} ms`);
  if (c.state === 'ceiling') {
    return `jitter buffer at its ceiling${ceiling(c.ceiling_s)}: the input asked for more (${c.hits} time(s)); later input runs it dry (${c.underruns} underrun(s) at the ceiling)`;
  }
  if (c.state === 'above') {
    return `jitter buffer keeps ${ms(c.depth_s)} ms above its ${ms(c.target_s)} ms reserve${ceiling(c.ceiling_s)}: the input came late or in bursts; it falls back once the input is steady`;
  }
  return `jitter buffer back within ${ms(DEPTH_ALLOWANCE_S)} ms of its ${ms(c.target_s)} ms reserve (${ms(c.depth_s)} ms above it)`;
}
