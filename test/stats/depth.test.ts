import t from 'tap';
import { parseLine, type ClockBridgeEvent } from '../../src/stats/parse-line.js';
import { depthBetween, describeDepth } from '../../src/stats/depth.js';
import { PipelineStats } from '../../src/stats/pipeline-stats.js';

const report = (depthSeconds: number | undefined, ceilingHits = 0, ceilingUnderruns = 0): ClockBridgeEvent => ({
  kind: 'clockbridge', element: 'bridge', driftPpm: 0, fillSeconds: 0.07, targetSeconds: 0.05, setpointSeconds: 0.05 + (depthSeconds ?? 0),
  underruns: 0, overruns: 0, inputActive: true, inputFrames: 48000, insertedSilenceSeconds: 0, lastUnderrunSeconds: 0, latencySeconds: 0.07, ratio: 1,
  ...(depthSeconds === undefined ? {} : { depthSeconds, ceilingSeconds: 0.3, ceilingHits, ceilingUnderruns }),
});

void t.test('the depth above the allowance: one line up with why, one back, nothing between', async (t) => {
  const up = depthBetween(report(0.02), report(0.318));
  t.same(up, { state: 'above', depth_s: 0.318, target_s: 0.05, ceiling_s: 0.3 });
  t.match(up === undefined ? '' : describeDepth(up), /keeps 318 ms above its 50 ms reserve, ceiling 300 ms: the input came late or in bursts/);
  t.equal(depthBetween(report(0.318), report(0.2)), undefined, 'still above: nothing new');
  const back = depthBetween(report(0.03), report(0.024));
  t.same(back, { state: 'back', depth_s: 0.024, target_s: 0.05 });
  t.match(back === undefined ? '' : describeDepth(back), /back within 25 ms of its 50 ms reserve/);
  t.equal(depthBetween(undefined, report(0.01)), undefined, 'a first report at rest: nothing');
  t.equal(depthBetween(report(undefined), report(undefined)), undefined, 'an element without the fields: nothing');
});

void t.test('the ceiling: each new episode logged with the underruns at it', async (t) => {
  const hit = depthBetween(report(0.25, 0), report(0.25, 2, 1));
  t.same(hit, { state: 'ceiling', hits: 2, underruns: 1, ceiling_s: 0.3 });
  t.match(hit === undefined ? '' : describeDepth(hit), /at its ceiling, ceiling 300 ms: the input asked for more \(2 time\(s\)\); later input runs it dry \(1 underrun\(s\) at the ceiling\)/);
});

void t.test('the element message carries depth, ceiling and its counts; the report and the counts sum them', async (t) => {
  const line = 'Got message #54 from element "bridge" (element): clockbridge, running-time=(guint64)3000233614, drift-ppm=(double)1.5, fill=(double)0.0647, target=(double)0.05, setpoint=(double)0.0617, depth=(double)0.0117, ceiling=(double)0.3, ceiling-hits=(guint64)3, ceiling-underruns=(guint64)1, underruns=(guint64)0, overruns=(guint64)0, input-active=(boolean)true, input-frames=(guint64)145408, inserted-silence=(double)0, last-underrun=(double)0, latency=(double)0.07, ratio=(double)1.0001;';
  const event = parseLine(line);
  t.match(event, { kind: 'clockbridge', depthSeconds: 0.0117, ceilingSeconds: 0.3, ceilingHits: 3, ceilingUnderruns: 1 });
  const old = parseLine(line.replace(/ depth=[^;]*ceiling-underruns=\(guint64\)1,/, ''));
  t.equal(old?.kind === 'clockbridge' ? old.depthSeconds : 'none', undefined, 'an element without them: unknown');
  const stats = new PipelineStats(1000);
  if (event !== undefined) stats.apply(event, 0);
  t.match(stats.clockReport(200), { jitter_depth_seconds: 0.0117, jitter_ceiling_seconds: 0.3, ceiling_hits: 3 });
  t.equal(stats.counts().bridgeCeilingUnderruns, 1);
});
