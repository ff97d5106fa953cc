import t from 'tap';
import type { ClockBridgeEvent } from '../../src/stats/parse-line.js';
import { describeUnderrun, underrunBetween } from '../../src/stats/underruns.js';

const report = (underruns: number, insertedSilenceSeconds: number, lastUnderrunSeconds = 0): ClockBridgeEvent => ({
  kind: 'clockbridge', element: 'bridge', driftPpm: 0, fillSeconds: 0.07, targetSeconds: 0.02, setpointSeconds: 0.07,
  underruns, overruns: 0, inputActive: true, inputFrames: 48000, insertedSilenceSeconds, lastUnderrunSeconds, latencySeconds: 0.07, ratio: 1,
});

void t.test('an underrun the input came back from: its length, cause input-late', async (t) => {
  const r = underrunBetween(report(0, 0), report(1, 0.0556, 0.0556));
  t.same(r, { count: 1, silence_ms: 55.6, last_ms: 55.6, cause: 'input-late' });
  t.match(describeUnderrun(r ?? { count: 0, silence_ms: 0, last_ms: 0, cause: 'input-late' }), /silent for 55.6 ms: the input was late/);
});

void t.test('a FIFO that ran dry with no input back yet: input-stopped; its return is then logged as late', async (t) => {
  const dry = underrunBetween(report(2, 0.01), report(3, 0.01));
  t.same(dry, { count: 1, silence_ms: 0, last_ms: 0, cause: 'input-stopped' });
  t.match(describeUnderrun(dry ?? { count: 0, silence_ms: 0, last_ms: 0, cause: 'input-stopped' }), /no input/);
  t.same(underrunBetween(report(3, 0.01), report(3, 0.03, 0.02)), { count: 0, silence_ms: 20, last_ms: 20, cause: 'input-late' });
});

void t.test('nothing new: nothing to log; the first report of a child counts from 0', async (t) => {
  t.equal(underrunBetween(report(1, 0.02), report(1, 0.02)), undefined);
  t.equal(underrunBetween(undefined, report(0, 0)), undefined);
  t.same(underrunBetween(undefined, report(1, 0.012, 0.012)), { count: 1, silence_ms: 12, last_ms: 12, cause: 'input-late' });
});
