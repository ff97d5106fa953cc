/**
 * The metrics text of the engine's own registry (createMetrics) for pipelines fed with the real
 * statistics lines of a child (test/fixtures/gst-launch-1.22/clockbridge-srt.stdout): every
 * series of a pipeline is in every scrape from its creation to its deletion, whatever its child
 * reported; an unknown value reads as docs/api.md says (NaN for the clock bridge's values).
 * The managed pipelines are real and never start a child: the test feeds their statistics itself.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import t from 'tap';
import { createMetrics, type SupervisedSource } from '../../src/metrics/registry.js';
import { parseLine, type StatsEvent } from '../../src/stats/parse-line.js';
import { PipelineStats } from '../../src/stats/pipeline-stats.js';
import { DEFAULT_BACKOFF } from '../../src/supervisor/backoff.js';
import { launchChild } from '../../src/process/child.js';
import type { SupervisorDeps } from '../../src/supervisor/child-supervisor.js';
import { ManagedPipeline } from '../../src/pipelines/managed-pipeline.js';
import type { CompilableSpec } from '../../src/compiler/compile.js';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/gst-launch-1.22');
/** One real child's statistics, one interval after another: [pipelinestats, level, clockbridge] each. */
const intervals: StatsEvent[][] = [];
for (const line of readFileSync(path.join(dir, 'clockbridge-srt.stdout'), 'utf8').split('\n')) {
  const event = parseLine(line);
  if (event === undefined) continue;
  if (event.kind === 'pipelinestats') intervals.push([]);
  intervals.at(-1)?.push(event);
}

const deps: SupervisorDeps = {
  launch: launchChild,
  command: 'gst-launch-1.0',
  env: {},
  log: pino({ level: 'silent' }),
  backoff: DEFAULT_BACKOFF,
  random: () => 0.5,
  now: () => 0,
  stopBounds: { eosMs: 500, termMs: 500 },
  logLines: 10,
  statsIntervalMs: 1000,
  stallAfterMs: 5000,
  readyTimeoutMs: 10_000,
  prerollExitMs: 1000,
};

/** A pipeline as the registry has it: SRT in, one loudness step, RTP out; no child started. */
function pipeline(id: string): { record: { id: string; spec: { input: { latency: number } } }; managed: ManagedPipeline<CompilableSpec> } {
  const spec: CompilableSpec = {
    input: { type: 'srt', port: 9000, latency: 120 },
    processing: [{ plugin: 'loudness-normalize', target: -23, true_peak: -1 }],
    output: { type: 'rtp', host: '127.0.0.1', port: 9, ttl: 16, channels: 2, encoding: 'L24', ptime: 1, payload_type: 96, dscp: 34 },
  };
  const managed = new ManagedPipeline({
    id,
    label: `pipeline ${id}`,
    spec,
    version: 1,
    compile: { statsIntervalMs: 1000, packetsPerSend: 4, clockSource: 'tai', jitterMs: 20 },
    supervisorDeps: deps,
    held: () => true,
    log: deps.log,
    now: deps.now,
  });
  return { record: { id, spec: { input: { latency: 120 } } }, managed };
}

/** The series of one pipeline in a scrape: `name{labels}` → value. */
function seriesOf(text: string, id: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !line.includes(`pipeline_id="${id}"`)) continue;
    const cut = line.lastIndexOf(' ');
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

const key = (name: string, id: string): string => `audio_engine_pipeline_${name}{pipeline_id="${id}"}`;
const CLOCK = ['input_clock_drift_ppm', 'input_clock_drift_uncertainty_ppm', 'jitter_buffer_seconds', 'buffer_fill_ratio', 'latency_seconds'];

void t.test('every series of a pipeline is in every scrape, whatever its child reported', async (t) => {
  t.ok(intervals.length >= 8 && intervals.every((events) => events.some((e) => e.kind === 'clockbridge')), `${intervals.length} intervals of the fixture, each with a clockbridge report`);
  const pipelines = [pipeline('pl_a'), pipeline('pl_b')];
  const registry = createMetrics({ entries: () => pipelines }, '0.0.0');
  const scrape = async (): Promise<Map<string, number>[]> => {
    const text = await registry.metrics();
    return pipelines.map((p) => seriesOf(text, p.record.id));
  };
  const names = (series: Map<string, number>): string[] => [...series.keys()].map((k) => k.replace(/pipeline_id="[^"]+"/, '')).sort();

  // created, no child yet
  const [created] = await scrape();
  if (created === undefined) throw new Error('no scrape');
  const reference = names(created);
  t.ok(reference.length > 30, `${reference.length} series per pipeline`);
  for (const name of CLOCK) t.ok(Number.isNaN(created.get(key(name, 'pl_a'))), `${name}: NaN before any report`);
  t.equal(created.get(key('srt_connected', 'pl_a')), 0);
  t.equal(created.get(`audio_engine_pipeline_input_rms_dbfs{pipeline_id="pl_a",channel="0"}`), -120);

  const steps: [string, () => void, (a: Map<string, number>) => void][] = [
    ['a child started, nothing reported', () => pipelines.forEach((p) => p.managed.stats.childStarted()), (a) => {
      t.ok(Number.isNaN(a.get(key('input_clock_drift_ppm', 'pl_a'))), 'drift unknown');
    }],
    ['its first interval without the clockbridge message', () => pipelines.forEach((p) => feed(p.managed.stats, intervals[0] ?? [], 1000, 'clockbridge')), (a) => {
      t.ok(Number.isNaN(a.get(key('input_clock_drift_ppm', 'pl_a'))), 'drift still unknown: no report yet');
      t.ok(Number.isNaN(a.get(key('buffer_fill_ratio', 'pl_a'))), 'buffer fill unknown: only the clock bridge reports it');
      t.equal(a.get(key('output_packets_total', 'pl_a')), 980, 'the other reports count');
    }],
    ['three whole intervals', () => [1, 2, 3].forEach((i) => pipelines.forEach((p) => feed(p.managed.stats, intervals[i] ?? [], 1000 * (i + 1)))), (a) => {
      t.equal(a.get(key('input_clock_drift_ppm', 'pl_a')), 24.789165465862261, 'the bridge\'s drift');
      t.ok(Number.isNaN(a.get(key('input_clock_drift_uncertainty_ppm', 'pl_a'))), 'an element without the estimate: uncertainty unknown');
      t.ok((a.get(key('jitter_buffer_seconds', 'pl_a')) ?? 0) > 0.05);
      const bridge = pipelines[0]?.managed.stats.clock;
      t.equal(a.get(key('buffer_fill_ratio', 'pl_a')), bridge === undefined ? -1 : bridge.fillSeconds / bridge.setpointSeconds, 'buffer fill: the bridge\'s fill over its setpoint');
    }],
    ['an interval whose clockbridge message is missing', () => pipelines.forEach((p) => feed(p.managed.stats, intervals[4] ?? [], 5000, 'clockbridge')), (a) => {
      t.equal(a.get(key('input_clock_drift_ppm', 'pl_a')), 24.789165465862261, 'the last report stands');
    }],
    ['the child ended', () => pipelines.forEach((p) => p.managed.stats.childEnded()), (a) => {
      for (const name of CLOCK) t.ok(Number.isNaN(a.get(key(name, 'pl_a'))), `${name}: NaN without a child`);
      t.equal(a.get(key('output_packets_total', 'pl_a')), 4980, 'counters stay (the fifth report\'s count)');
    }],
    ['the next child reports', () => pipelines.forEach((p) => {
      p.managed.stats.childStarted();
      feed(p.managed.stats, intervals[5] ?? [], 7000);
    }), (a) => {
      t.equal(a.get(key('input_clock_drift_ppm', 'pl_a')), 24.789165465862261);
    }],
  ];
  for (const [what, act, check] of steps) {
    act();
    const [a, b] = await scrape();
    if (a === undefined || b === undefined) throw new Error('no scrape');
    t.same(names(a), reference, `${what}: pl_a has every series`);
    t.same(names(b), reference, `${what}: pl_b has every series`);
    check(a);
  }

  pipelines.pop();
  const text = await registry.metrics();
  t.equal(seriesOf(text, 'pl_b').size, 0, 'a deleted pipeline\'s series are gone at the next scrape');
  t.same(names(seriesOf(text, 'pl_a')), reference);
});

// Captured from the built element (clockbridge-estimate.stdout): before 10 s of input no estimate,
// then the estimate with its uncertainty while drift-ppm is still the loop's integrator.
const [BEFORE_ESTIMATE = '', WITH_ESTIMATE = ''] = readFileSync(path.join(dir, 'clockbridge-estimate.stdout'), 'utf8').split('\n');

void t.test('the drift and its uncertainty from the bridge\'s estimate', async (t) => {
  const p = pipeline('pl_e');
  const registry = createMetrics({ entries: () => [p] }, '0.0.0');
  const read = async (): Promise<Map<string, number>> => seriesOf(await registry.metrics(), 'pl_e');
  p.managed.stats.childStarted();
  for (const [line, at] of [[BEFORE_ESTIMATE, 1000], [WITH_ESTIMATE, 4000]] as const) {
    const event = parseLine(line);
    if (event === undefined) throw new Error('the captured line does not parse');
    p.managed.stats.apply(event, at);
    const series = await read();
    if (line === BEFORE_ESTIMATE) {
      t.ok(Number.isNaN(series.get(key('input_clock_drift_ppm', 'pl_e'))), 'no estimate yet: the drift NaN although drift-ppm has a figure');
      t.ok(Number.isNaN(series.get(key('input_clock_drift_uncertainty_ppm', 'pl_e'))), 'and its uncertainty');
    } else {
      t.equal(series.get(key('input_clock_drift_ppm', 'pl_e')), 3.7122227159676178, 'the estimate');
      t.equal(series.get(key('input_clock_drift_uncertainty_ppm', 'pl_e')), 14.038284751379219, 'its uncertainty');
    }
  }
});

/** Applies one interval's events at `now`, leaving out those of kind `skip`. */
function feed(stats: PipelineStats, events: StatsEvent[], now: number, skip?: StatsEvent['kind']): void {
  for (const event of events) if (event.kind !== skip) stats.apply(event, now);
}

void t.test('a pipeline added right after a scrape is in the next one, with its child CPU and memory', async (t) => {
  const pipelines = [pipeline('pl_first')];
  const registry = createMetrics({ entries: () => pipelines }, '0.0.0');
  t.ok(seriesOf(await registry.metrics(), 'pl_first').has(key('child_cpu_seconds_total', 'pl_first')));
  pipelines.push(pipeline('pl_second'));
  // within the 100 ms the first scrape's /proc sample is shared (or not: the outcome is the same)
  const next = seriesOf(await registry.metrics(), 'pl_second');
  t.equal(next.get(key('child_cpu_seconds_total', 'pl_second')), 0);
  t.equal(next.get(key('child_resident_memory_bytes', 'pl_second')), 0);
});

void t.test('scrapes at the same time see the same child CPU, not the sum of both', async (t) => {
  // A supervised thing whose "child" is this test process: real /proc figures that are not 0.
  const idle = pipeline('pl_self').managed;
  const source: SupervisedSource = {
    entries: () => [{ record: { id: 'pl_self' }, managed: { pid: process.pid, stats: idle.stats, snapshot: () => idle.snapshot() } }],
  };
  const registry = createMetrics(source, '0.0.0');
  for (let round = 0; round < 5; round++) {
    const texts = await Promise.all([registry.metrics(), registry.metrics(), registry.metrics()]);
    const cpu = texts.map((text) => seriesOf(text, 'pl_self').get(key('child_cpu_seconds_total', 'pl_self')));
    const own = (process.cpuUsage().user + process.cpuUsage().system) / 1e6;
    // /proc counts in 10 ms ticks; a scrape that added another's sample would read about twice `own`
    t.ok(cpu.every((v) => v !== undefined && v > 0 && v <= own + 0.02), `round ${round}: ${cpu.join(', ')} s, the process has used ${own.toFixed(2)} s`);
  }
});

/** One pipeline in its own registry, a reader of one of its series, and the fixture's clock bridge report. */
function oneSeries(id: string, metric: string): {
  p: ReturnType<typeof pipeline>;
  registry: ReturnType<typeof createMetrics>;
  read: () => Promise<number | undefined>;
  bridge: Extract<StatsEvent, { kind: 'clockbridge' }>;
} {
  const p = pipeline(id);
  const registry = createMetrics({ entries: () => [p] }, '0.0.0');
  const name = key(metric, id);
  const bridge = intervals[1]?.find((e) => e.kind === 'clockbridge');
  if (bridge?.kind !== 'clockbridge') throw new Error('no clockbridge report in the fixture');
  return { p, registry, read: async () => seriesOf(await registry.metrics(), id).get(name), bridge };
}

void t.test('audio_engine_pipeline_output_realtime: 1 SCHED_FIFO, 0 refused, NaN unknown', async (t) => {
  const { p, registry, read, bridge } = oneSeries('pl_rt', 'output_realtime');
  t.ok(Number.isNaN(await read()), 'NaN before any report');
  p.managed.stats.childStarted();
  p.managed.stats.apply(bridge, 1000);
  t.ok(Number.isNaN(await read()), 'NaN from an element that does not say (the fixture predates the field)');
  p.managed.stats.apply({ ...bridge, outputRealtime: true, inputRealtime: false }, 2000);
  t.equal(await read(), 1, 'the output thread runs SCHED_FIFO');
  p.managed.stats.apply({ ...bridge, outputRealtime: false, inputRealtime: false }, 3000);
  t.equal(await read(), 0, 'refused');
  p.managed.stats.childEnded();
  t.ok(Number.isNaN(await read()), 'NaN without a running child');
  t.match(await registry.metrics(), /^# TYPE audio_engine_pipeline_output_realtime gauge$/m);
});

void t.test('audio_engine_pipeline_realtime_demotions_total: the guard\'s demotions, summed over children', async (t) => {
  const { p, registry, read, bridge } = oneSeries('pl_demoted', 'realtime_demotions_total');
  t.equal(await read(), 0, '0 before any report: a counter is kept');
  p.managed.stats.childStarted();
  p.managed.stats.apply(bridge, 1000);
  t.equal(await read(), 0, 'an element without the field: none');
  p.managed.stats.apply({ ...bridge, realtimeDemotions: 1 }, 2000);
  t.equal(await read(), 1, 'one thread demoted');
  p.managed.stats.childEnded();
  p.managed.stats.childStarted();
  p.managed.stats.apply({ ...bridge, realtimeDemotions: 2 }, 3000);
  t.equal(await read(), 3, 'the next child adds to the first');
  t.match(await registry.metrics(), /^# TYPE audio_engine_pipeline_realtime_demotions_total counter$/m);
});
