/**
 * Restart delays: exponential with jitter, reset after a stretch of health.
 * Pure: the caller supplies the random source and the clock readings.
 */
export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
  factor: number;
  /** Fraction of the delay drawn at random, e.g. 0.2 → ±20 %. */
  jitter: number;
  /** Running this long without a failure forgets earlier failures. */
  resetAfterMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = {
  initialMs: 500,
  maxMs: 30_000,
  factor: 2,
  jitter: 0.2,
  resetAfterMs: 60_000,
};

/** Delay before restart number `attempt` (1-based count of consecutive failures). */
export function backoffDelay(policy: BackoffPolicy, attempt: number, random: () => number): number {
  const base = Math.min(policy.maxMs, policy.initialMs * policy.factor ** Math.max(0, attempt - 1));
  const spread = base * policy.jitter * (2 * random() - 1);
  return Math.max(0, Math.round(Math.min(policy.maxMs, base + spread)));
}

/** Consecutive failures after a child that ran for `ranMs` failed again. */
export function nextAttempt(policy: BackoffPolicy, previousAttempt: number, ranMs: number): number {
  return ranMs >= policy.resetAfterMs ? 1 : previousAttempt + 1;
}
