/**
 * Supervision of a pipeline's child, in milliseconds: a ManagedPipeline whose children are
 * FakeChild replays of captured gst-launch-1.0 1.22 output (test/fixtures/gst-launch-1.22/) and
 * whose time is a FakeClock. Start, statistics, crash and back-off, a graph that can never run,
 * a bind failure, a start that never reaches PLAYING, a stalled child, a caller that sent
 * nothing, and the stop's escalation. What only a real child can show (a real crash, a port
 * really taken, audio through it) stays in test/e2e/supervision.test.ts.
 */
import { pino } from 'pino';
import t, { type Test } from 'tap';
import type { CompilableSpec } from '../../src/compiler/compile.js';
import { ManagedPipeline } from '../../src/pipelines/managed-pipeline.js';
import { DEFAULT_BACKOFF } from '../../src/supervisor/backoff.js';
import type { SupervisorDeps } from '../../src/supervisor/child-supervisor.js';
import { capturedRun, FakeLauncher } from '../helpers/fake-child.js';
import { FakeClock, settle } from '../helpers/fake-clock.js';

const SPEC: CompilableSpec = {
  input: { type: 'srt', port: 9000, latency: 120 },
  processing: [{ plugin: 'loudness-normalize', target: -23, true_peak: -1 }],
  output: { type: 'rtp', host: '127.0.0.1', port: 9, ttl: 16, channels: 2, encoding: 'L24', ptime: 1, payload_type: 96, dscp: 34 },
};

const READY_MS = 10_000;
const STALL_MS = 5_000;

/** The captured SRT run, split where gst-launch says PLAYING and then at each pipelinestats report (one per second). */
const run = capturedRun('clockbridge-srt');
const playingAt = run.stdout.findIndex((l) => l.startsWith('Setting pipeline to PLAYING'));
const startLines = run.stdout.slice(0, playingAt + 1);
const intervals: string[][] = [];
for (const line of run.stdout.slice(playingAt + 1)) {
  if (/from element "stats"/.test(line) || intervals.length === 0) intervals.push([]);
  intervals.at(-1)?.push(line);
}

function harness(t: Test) {
  const clock = new FakeClock();
  const launcher = new FakeLauncher();
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (text: string) => lines.push(JSON.parse(text) as Record<string, unknown>) });
  const deps: SupervisorDeps = {
    launch: launcher.launch,
    command: 'gst-launch-1.0',
    env: {},
    log,
    backoff: DEFAULT_BACKOFF,
    random: () => 0.5, // no jitter: delays are 500, 1000, 2000, ... ms
    now: clock.now,
    timers: clock,
    stopBounds: { eosMs: 3000, termMs: 2000 },
    logLines: 200,
    statsIntervalMs: 1000,
    stallAfterMs: STALL_MS,
    readyTimeoutMs: READY_MS,
    prerollExitMs: 1000,
  };
  let held = false;
  const pipeline = new ManagedPipeline({
    id: 'pl_test',
    label: 'pipeline pl_test',
    spec: SPEC,
    version: 1,
    compile: { statsIntervalMs: 1000, packetsPerSend: 4, clockSource: 'tai', jitterMs: 20 },
    supervisorDeps: deps,
    held: () => held,
    log: log.child({ pipeline_id: 'pl_test' }),
    now: clock.now,
  });
  t.teardown(async () => {
    held = true;
    const stopping = pipeline.supervisor.stop();
    await clock.advance(10_000);
    await stopping;
  });
  /** Plays the captured start and `n` intervals of statistics, a second each. */
  const play = async (n: number): Promise<void> => {
    launcher.current.print(startLines);
    for (let i = 0; i < n; i++) {
      launcher.current.print(intervals[i % intervals.length] ?? []);
      await clock.advance(1000);
    }
  };
  return { clock, launcher, lines, pipeline, play, events: (name: string) => lines.filter((l) => l.event === name) };
}

t.ok(playingAt > 0 && intervals.length >= 8, `the fixture: PLAYING at line ${playingAt + 1}, ${intervals.length} intervals`);

void t.test('a child that plays: running, with the statistics of its reports', async (t) => {
  const { pipeline, launcher, play } = harness(t);
  pipeline.start();
  t.equal(pipeline.snapshot().state, 'starting');
  t.ok(launcher.current.options.args.includes('loudnorm'), 'the child runs the compiled graph');
  await play(6);
  const view = pipeline.runtimeView();
  t.equal(view.state, 'running');
  t.equal(view.pid, launcher.current.pid);
  t.equal(view.srt_connected, true, 'the SRT caller of the capture is connected');
  t.ok(pipeline.stats.childPassedAudio(), 'the bridge got audio');
  t.ok(view.clock !== null && view.clock.latency_seconds !== null, `the clock report (latency ${String(view.clock?.latency_seconds)} s)`);
  t.same(pipeline.stats.layout.loudnessSteps, ['step0'], 'the loudness step from the plan');
});

void t.test('a crash is restarted with growing back-off; a long clean run forgets it', async (t) => {
  const { pipeline, launcher, clock, play, events } = harness(t);
  pipeline.start();
  await play(2);
  const delays: number[] = [];
  for (let i = 0; i < 4; i++) {
    launcher.current.printError(['Caught SIGSEGV']);
    launcher.current.exit({ signal: 'SIGSEGV' });
    await settle();
    const info = pipeline.snapshot();
    t.equal(info.state, 'backoff', `crash ${i + 1}: back-off`);
    t.equal(info.last_error, 'killed by SIGSEGV');
    const retryAt = info.next_retry_at === null ? NaN : Date.parse(info.next_retry_at);
    delays.push(retryAt - clock.now());
    const before = launcher.children.length;
    await clock.advance(delays.at(-1) ?? 0);
    t.equal(launcher.children.length, before + 1, 'a new child once the delay is over');
    await play(1);
  }
  t.same(delays, [500, 1000, 2000, 4000], 'the delays double from 500 ms');
  t.equal(pipeline.snapshot().restarts, 4);
  t.equal(events('retry').length, 4, 'each in the log');
  await play(61); // more than resetAfterMs of health
  launcher.current.exit({ signal: 'SIGSEGV' });
  await settle();
  t.equal(Date.parse(pipeline.snapshot().next_retry_at ?? '') - clock.now(), 500, 'after a minute of health the next delay is the first again');
});

void t.test('a graph that can never run is failed with the reason and not retried', async (t) => {
  const { pipeline, launcher, clock } = harness(t);
  pipeline.start();
  launcher.current.replayRun(capturedRun('unknown-element'));
  await settle();
  const info = pipeline.snapshot();
  t.equal(info.state, 'failed');
  t.match(info.last_error, /no element "nosuchelement"/);
  await clock.advance(60_000);
  t.equal(launcher.children.length, 1, 'no second child');
});

void t.test('a bind failure is retried with back-off and the reason names the port', async (t) => {
  const { pipeline, launcher, clock } = harness(t);
  pipeline.start();
  launcher.current.replayRun(capturedRun('bind-failure'));
  await settle();
  const info = pipeline.snapshot();
  t.equal(info.state, 'backoff');
  t.match(info.last_error, /Cannot bind to 0\.0\.0\.0:19031/);
  await clock.advance(500);
  t.equal(launcher.children.length, 2, 'retried after 500 ms');
});

void t.test('a child that never reaches PLAYING is killed at the start deadline and restarted', async (t) => {
  const { pipeline, launcher, clock, events } = harness(t);
  pipeline.start();
  launcher.current.print(['Setting pipeline to PAUSED ...', 'Pipeline is live and does not need PREROLL ...']);
  await clock.advance(READY_MS - 1);
  t.same(launcher.current.signals, [], 'nothing before the deadline');
  await clock.advance(1);
  t.same(launcher.children[0]?.signals, ['SIGKILL'], 'killed at the deadline');
  t.match(pipeline.snapshot().last_error, /did not reach PLAYING within 10 s/);
  t.equal(events('start-timeout').length, 1);
  await clock.advance(500);
  t.equal(launcher.children.length, 2, 'a new child after the back-off');
});

void t.test('a running child that stops reporting is killed as stalled', async (t) => {
  const { pipeline, launcher, clock, play } = harness(t);
  pipeline.start();
  await play(3);
  const first = launcher.current;
  await clock.advance(STALL_MS - 2000); // the last report came a second before play() returned
  t.same(first.signals, [], `silent for ${STALL_MS - 1000} ms: not yet`);
  await clock.advance(2000);
  t.same(first.signals, ['SIGKILL'], 'killed');
  t.match(pipeline.snapshot().last_error, /stalled: no statistics from the child for [56]\.\d s/);
});

void t.test('a caller that sent nothing: the next child at once, no back-off', async (t) => {
  const { pipeline, launcher, clock } = harness(t);
  pipeline.start();
  for (let i = 0; i < 3; i++) {
    launcher.current.replayRun(capturedRun('srt-empty-caller'));
    await settle();
    t.not(pipeline.snapshot().state, 'backoff', `empty caller ${i + 1}: not backed off`);
    await clock.advance(1000);
  }
  t.equal(launcher.children.length, 4, 'a new child for each');
  t.match(pipeline.snapshot().last_error, /the source ended before sending any audio/, 'the reason is told');
  t.equal(pipeline.snapshot().restarts, 3, 'counted as restarts, never backed off');
});

void t.test('stop: EOS first; a child that ignores it gets SIGTERM, then SIGKILL', async (t) => {
  const { pipeline, launcher, clock, play, events } = harness(t);
  pipeline.start();
  await play(1);
  let stopped = pipeline.supervisor.stop();
  await settle();
  t.same(launcher.current.signals, ['SIGINT'], 'EOS');
  await stopped;
  t.equal(pipeline.snapshot().state, 'stopped');
  launcher.behaviour = { endsOnSigint: false, endsOnSigterm: false };
  pipeline.supervisor.start();
  await play(1);
  stopped = pipeline.supervisor.stop();
  await clock.advance(3000);
  t.same(launcher.current.signals, ['SIGINT', 'SIGTERM'], 'SIGTERM after the EOS bound');
  await clock.advance(2000);
  await stopped;
  t.same(launcher.current.signals, ['SIGINT', 'SIGTERM', 'SIGKILL'], 'SIGKILL after the SIGTERM bound');
  t.same(events('stop-escalate').map((l) => l.signal), ['SIGTERM', 'SIGKILL']);
});
