import t from 'tap';
import { backoffDelay, DEFAULT_BACKOFF, nextAttempt } from '../../src/supervisor/backoff.js';

void t.test('delays double from 0.5 s to a 30 s cap', async (t) => {
  const mid = () => 0.5; // no jitter
  t.same([1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => backoffDelay(DEFAULT_BACKOFF, n, mid)), [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
});

void t.test('jitter stays within ±20 % and under the cap', async (t) => {
  t.equal(backoffDelay(DEFAULT_BACKOFF, 1, () => 0), 400);
  t.equal(backoffDelay(DEFAULT_BACKOFF, 1, () => 1), 600);
  t.equal(backoffDelay(DEFAULT_BACKOFF, 20, () => 1), 30000);
});

void t.test('60 s of health forgets earlier failures', async (t) => {
  t.equal(nextAttempt(DEFAULT_BACKOFF, 5, 59_999), 6);
  t.equal(nextAttempt(DEFAULT_BACKOFF, 5, 60_000), 1);
});
