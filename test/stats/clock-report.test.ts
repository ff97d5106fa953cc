import t from 'tap';
import type { ClockBridgeEvent, LevelEvent } from '../../src/stats/parse-line.js';
import { PipelineClock } from '../../src/gen/svc/v1/engine.js';
import { pipelineToProto } from '../../src/grpc/to-proto.js';
import { PipelineStats, type ClockReport } from '../../src/stats/pipeline-stats.js';
import type { PipelineView } from '../../src/pipelines/registry.js';

/** A bridge report; `inputFrames` is cumulative over the child, as the element counts. */
const bridge = (inputActive: boolean, fillSeconds = 0.02, inputFrames = inputActive ? 48000 : 0): ClockBridgeEvent => ({
  kind: 'clockbridge', element: 'bridge', driftPpm: 41.237, fillSeconds, targetSeconds: 0.02, setpointSeconds: 0.031,
  underruns: 3, overruns: 1, inputActive, inputFrames, insertedSilenceSeconds: 0.012, lastUnderrunSeconds: 0.012, latencySeconds: 0.027, ratio: 1.000041,
});
const level = (db: number): LevelEvent => ({ kind: 'level', element: 'level', rmsDb: [db, db], peakDb: [db, db] });
/** A pipeline as the registry shows it, with this clock report (what gRPC maps). */
const view = (clock: ClockReport): PipelineView => ({
  id: 'pl_x', name: 'x', status: 'active', created_at: '', version: 1, state: 'running', pid: 1, restarts: 0, last_error: null, exit_code: null, exit_signal: null,
  state_since: '', next_retry_at: null, priority: 'normal', realtime_ratio: null, behind: false, input_state: 'receiving',
  input: { type: 'srt', port: 9000, latency: 120 }, processing: [], clock,
  active_input: null, selection: 'auto', inputs: { main: { connected: false, level_dbfs: null, silent_seconds: null } }, output_legs: [],
  output: { type: 'rtp', host: '127.0.0.1', port: 5004, ttl: 16, channels: 2, encoding: 'L24', ptime: 1, payload_type: 96, dscp: 34 },
}) as unknown as PipelineView;

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
    // an element without the estimate: its report, no uncertainty
    drift_uncertainty_ppm: null,
    jitter_buffer_seconds: 0.02035,
    jitter_target_seconds: 0.02,
    jitter_setpoint_seconds: 0.031,
    // an element before the ceiling: unknown, none counted
    jitter_depth_seconds: null,
    jitter_ceiling_seconds: null,
    ceiling_hits: 0,
    underruns: 3,
    overruns: 1,
    inserted_silence_seconds: 0.012,
    latency_seconds: 0.147,
    output_realtime: null,
    input_realtime: null,
  });
  t.equal(stats.clockReport(0)?.latency_seconds, 0.027, 'an input without SRT latency (Icecast stdin)');
});

void t.test('the clock report says whether the threads run real time: the current child\'s, null when not said', async (t) => {
  const stats = new PipelineStats(1000);
  stats.apply(bridge(false), 1000);
  t.match(stats.clockReport(120), { output_realtime: null, input_realtime: null }, 'an element that does not say: unknown');
  stats.apply({ ...bridge(false), outputRealtime: true, inputRealtime: false }, 2000);
  t.match(stats.clockReport(120), { output_realtime: true, input_realtime: false }, 'output SCHED_FIFO, no input buffer yet');
  stats.apply({ ...bridge(true), outputRealtime: true, inputRealtime: true }, 3000);
  t.match(stats.clockReport(120), { output_realtime: true, input_realtime: true });
  stats.childEnded();
  t.equal(stats.clockReport(120), undefined, 'no child: no report');
  stats.childStarted();
  stats.apply({ ...bridge(false), outputRealtime: false, inputRealtime: false }, 4000);
  t.match(stats.clockReport(120), { output_realtime: false, input_realtime: false }, 'the next child\'s, refused');
});

void t.test('gRPC PipelineClock: output_realtime 9 and input_realtime 10, absent when unknown', async (t) => {
  const stats = new PipelineStats(1000);
  stats.apply({ ...bridge(true), outputRealtime: true, inputRealtime: false }, 1000);
  const known = stats.clockReport(120);
  stats.apply(bridge(true), 2000);
  const unknown = stats.clockReport(120);
  if (known === undefined || unknown === undefined) throw new Error('no report');
  const sent = pipelineToProto(view(known), '').clock;
  t.match(sent, { output_realtime: true, input_realtime: false });
  const decoded = PipelineClock.decode(PipelineClock.encode(sent ?? PipelineClock.fromPartial({})).finish());
  t.match(decoded, { output_realtime: true, input_realtime: false }, 'on the wire: false is sent (proto3 optional), not dropped');
  const none = pipelineToProto(view(unknown), '').clock;
  t.equal(none?.output_realtime, undefined, 'null in REST: absent in gRPC');
  t.equal(PipelineClock.decode(PipelineClock.encode(none ?? PipelineClock.fromPartial({})).finish()).output_realtime, undefined);
});

void t.test('a drift the bridge does not know yet (NaN): null in REST, absent in gRPC; 0 ppm is sent', async (t) => {
  const stats = new PipelineStats(1000);
  const wire = (clock: ClockReport): PipelineClock =>
    PipelineClock.decode(PipelineClock.encode(pipelineToProto(view(clock), '').clock ?? PipelineClock.fromPartial({})).finish());
  stats.apply({ ...bridge(true), driftPpm: Number.NaN }, 1000);
  const unknown = stats.clockReport(120);
  if (unknown === undefined) throw new Error('no report');
  t.equal(unknown.drift_ppm, null, 'REST: null, not NaN (which JSON cannot carry)');
  t.match(JSON.parse(JSON.stringify(unknown)) as unknown, { drift_ppm: null }, 'and so in JSON');
  t.equal(wire(unknown).drift_ppm, undefined, 'gRPC: absent');
  stats.apply({ ...bridge(true), driftPpm: 0 }, 2000);
  const zero = stats.clockReport(120);
  if (zero === undefined) throw new Error('no report');
  t.equal(zero.drift_ppm, 0);
  t.equal(wire(zero).drift_ppm, 0, 'gRPC: 0 ppm is on the wire (proto3 optional), not taken for absent');
});

void t.test('the drift from the estimate with its uncertainty, whether the report is known or not', async (t) => {
  const stats = new PipelineStats(1000);
  const wire = (clock: ClockReport | undefined): PipelineClock =>
    PipelineClock.decode(PipelineClock.encode((clock && pipelineToProto(view(clock), '').clock) ?? PipelineClock.fromPartial({})).finish());
  stats.apply({ ...bridge(true), driftPpm: Number.NaN, driftEstimatePpm: Number.NaN, driftUncertaintyPpm: Number.NaN }, 1000);
  t.match(stats.clockReport(120), { drift_ppm: null, drift_uncertainty_ppm: null }, 'before 10 s of input: none');
  t.same(stats.drift(), { drift_ppm: null, drift_uncertainty_ppm: null });
  stats.apply({ ...bridge(true), driftPpm: Number.NaN, driftEstimatePpm: 1012.345, driftUncertaintyPpm: 108.7654 }, 2000);
  t.match(stats.clockReport(120), { drift_ppm: 1012.35, drift_uncertainty_ppm: 108.77 }, 'the estimate while the report is not known');
  t.same(stats.drift(), { drift_ppm: 1012.345, drift_uncertainty_ppm: 108.7654 }, 'unrounded for the metrics');
  t.equal(wire(stats.clockReport(120)).drift_ppm, 1012.35, 'gRPC carries the estimate');
  stats.apply({ ...bridge(true), driftPpm: 998.1, driftEstimatePpm: 999.2, driftUncertaintyPpm: 4.1 }, 3000);
  t.match(stats.clockReport(120), { drift_ppm: 999.2, drift_uncertainty_ppm: 4.1 }, 'the estimate, not the report, so that the two go together');
  stats.apply({ ...bridge(true), driftEstimatePpm: 999.2, driftUncertaintyPpm: Number.NaN }, 4000);
  t.match(stats.clockReport(120), { drift_ppm: null, drift_uncertainty_ppm: null }, 'an estimate without its uncertainty is none');
  stats.childEnded();
  t.same(stats.drift(), { drift_ppm: null, drift_uncertainty_ppm: null }, 'no child: none');
});
