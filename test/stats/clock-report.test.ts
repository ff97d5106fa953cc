import t from 'tap';
import type { ClockBridgeEvent, LevelEvent } from '../../src/stats/parse-line.js';
import { PipelineStats } from '../../src/stats/pipeline-stats.js';

/** A bridge report; `inputFrames` is cumulative over the child, as the element counts. */
const bridge = (inputActive: boolean, fillSeconds = 0.02, inputFrames = inputActive ? 48000 : 0): ClockBridgeEvent => ({
  kind: 'clockbridge', element: 'bridge', driftPpm: 41.237, fillSeconds, targetSeconds: 0.02, setpointSeconds: 0.031,
  underruns: 3, overruns: 1, inputActive, inputFrames, insertedSilenceSeconds: 0.012, lastUnderrunSeconds: 0.012, latencySeconds: 0.027, ratio: 1.000041,
});
const level = (db: number): LevelEvent => ({ kind: 'level', element: 'level', rmsDb: [db, db], peakDb: [db, db] });

void t.test('input_state follows the bridge: waiting without input, receiving with signal, silent after 5 s of silence', async (t) => {
  const stats = new PipelineStats(1000);
  t.equal(stats.report(0).input_state, 'waiting', 'nothing reported yet');
  stats.apply(bridge(false, 0), 1000);
  stats.apply(level(-200), 1000);
  t.equal(stats.report(1000).input_state, 'waiting', 'the bridge gets no input (its output is silence)');
  stats.apply(bridge(true, 0.02, 48_000), 2000);
  stats.apply(level(-20), 2000);
  t.equal(stats.report(2000).input_state, 'receiving');
  for (let now = 3000; now <= 8000; now += 1000) {
    stats.apply(bridge(true, 0.02, now * 48), now);
    stats.apply(level(-90), now);
  }
  t.equal(stats.report(8000).input_state, 'silent', 'input arrives, below -60 dBFS for 5 s');
  stats.apply(bridge(false, 0, 8000 * 48), 9000);
  t.equal(stats.report(9000).input_state, 'silent', 'one report without input: held (INPUT_HOLD_MS)');
  stats.apply(bridge(false, 0, 8000 * 48), 10_000);
  t.equal(stats.report(10_000).input_state, 'waiting', 'the caller left: 2 s without input');
});

void t.test('the clock report: rounded bridge figures, latency = SRT latency + bridge latency', async (t) => {
  const stats = new PipelineStats(1000);
  t.equal(stats.clockReport(120), undefined, 'none before the first report');
  stats.apply(bridge(true, 0.0203456), 1000);
  t.same(stats.clockReport(120), {
    drift_ppm: 41.24,
    jitter_buffer_seconds: 0.02035,
    jitter_target_seconds: 0.02,
    jitter_setpoint_seconds: 0.031,
    underruns: 3,
    overruns: 1,
    inserted_silence_seconds: 0.012,
    latency_seconds: 0.147,
  });
  t.equal(stats.clockReport(0)?.latency_seconds, 0.027, 'an input without SRT latency (Icecast stdin)');
});
