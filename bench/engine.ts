/**
 * Engine benchmarks: start-up, control plane and scale of the real engine
 * (`node dist/audio-engine.mjs`, run `npm run build` first), every process on 127.0.0.1.
 *
 *   node --import=tsx bench/engine.ts [--only engine|scale] [--quick] [--sender gst-shared|gst|ffmpeg] [--scale 1,8,16]
 *                                     [--window S] [--packets-per-send K] [--reference ffmpeg|floor|passthrough|no-bridge]
 *
 * engine (runEngineBench with parts.engine):
 *   - ready: the engine spawned `readyRuns` times (one temp folder: the first run scans a cold
 *     GStreamer registry, the others start warm); spawn -> first 200 of GET /health, and the
 *     `startup_ms` of its `ready` log line.
 *   - create -> running: `creates` sequential POST /api/v1/pipelines (loudness-normalize -23 and
 *     a 3-band eq, no sender); POST answer time, POST -> the child's `state` log event
 *     `to: running`, and DELETE (204 once the child is gone) time.
 *   - REST under load: autocannon (10 connections, `loadS` s) on GET /health and on
 *     GET /api/v1/pipelines with 8 pipelines listed.
 *   - gRPC unary: `grpcCalls` sequential GetHealth and ListPipelines (@grpc/grpc-js).
 * scale (parts.scale): for each N a fresh engine with N pipelines (loudness-normalize -23 and a
 *   3-band eq), fed over SRT (the 600 s AAC MPEG-TS programme; by default one gst-launch-1.0 with a
 *   tee and one srtsink per pipeline, `--sender gst` one process per pipeline) and received as
 *   RTP L24 on 127.0.0.1 by one bench/rtp-counter process (N sockets); after `settleS` s of
 *   steady state, a `windowS` s window: per pipeline child CPU
 *   (audio_engine_pipeline_child_cpu_seconds_total deltas) and RSS, engine CPU and RSS, RTP
 *   packets and sequence gaps per pipeline, SRT packets lost/dropped, the CPU of the senders, of
 *   the counter ("receivers") and of this node process ("bench"). `--packets-per-send K` writes
 *   `rtp_packets_per_send = K` in each engine's config.
 *   Real time = every pipeline: no RTP sequence gap, RTP rate within 2 % of 1000 packets/s, no
 *   SRT packet lost or dropped, no restart. The sweep stops at the first N that is not.
 *   `--reference ffmpeg|floor|passthrough|no-bridge`: after the engine's step at each N, the same
 *   step with N ffmpeg processes doing the pipelines' job, N of the floor (the input graph and a
 *   minimal C sender), N of the passthrough (the engine's graph without steps or meter) or N of
 *   that without the clock bridge, in the engine's place (bench/scale-reference.ts), the same
 *   sender, counter, settle, window and rule (bench/scale-window.ts); each kind's sweep stops at
 *   its own first N that is not real time, the other's goes on.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { TestClient } from '../test/grpc/client.js';
import { freeUdpPort } from '../test/helpers/ports.js';
import {
  BENCH_PROCESSING,
  BenchEngine,
  CounterUnanswered,
  ROOT,
  RTP_COUNTER_SOURCE,
  RtpCounters,
  SENDER_KINDS,
  Sender,
  benchBinary,
  loadAverage,
  programmeTs,
  rtpCounterBinary,
  senderCommand,
  senderLaunch,
  sleep,
  stopAll,
  summarize,
  type LatencySummary,
  type MetricTable,
  type SenderKind,
} from './engine-harness.js';
import { admissionBench, describeRules, type AdmissionBenchResult } from './engine-admission.js';
import { median, runIfMain } from './process.js';
import { COST_COMPILE_OPTIONS, FLOOR_SENDER_SOURCE } from './cost.js';
import {
  referenceScaleCommands, referenceScaleStep, referenceSrtStats, SCALE_REFERENCE_KINDS, type ReferenceScaleSetup, type ReferenceScaleStep, type ScaleReferenceKind,
} from './scale-reference.js';
import { openRigWindow, realTimeReasons, rtpTotals, rtpWindowSample, spread, sweepEnd, sweepSideBySide, unmeasuredFigures, waitForAudio, type RtpWindowSample, type ScaleStepFigures } from './scale-window.js';

export interface EngineBenchOptions {
  /** which parts to run (default both) */
  parts?: { engine: boolean; scale: boolean };
  /** a short run: fewer repetitions, N = 1, 8, short windows */
  quick?: boolean;
  readyRuns?: number;
  creates?: number;
  /** seconds of autocannon load per endpoint */
  loadS?: number;
  connections?: number;
  grpcCalls?: number;
  /** pipeline counts of the scale sweep, ascending */
  scaleNs?: number[];
  windowS?: number;
  settleS?: number;
  sender?: SenderKind;
  /**
   * scale: after the engine's step at each N, the same step with N ffmpeg processes doing the
   * pipelines' job, N of the floor, of the passthrough or of the no-bridge graph, instead
   * (bench/scale-reference.ts); each kind's sweep stops at its own first N that is not real time
   */
  reference?: ScaleReferenceKind;
  /**
   * scale: rounds at each N (default 3, 1 with --quick), each a fresh engine (and reference) with
   * every pipeline created at once; an N is whole only when every round was
   */
  scaleRounds?: number;
  /** scale: `control_priority` written under [engine] in each engine's config; the key is left out (the default) when unset */
  controlPriority?: number;
  /** scale: how fast the ffmpeg senders read against the host clock (1.0005: 500 ppm fast); default 1 */
  senderRate?: number;
  /**
   * scale: `rtp_packets_per_send` written under [engine] in each engine's config (1-16, RTP
   * packets the sink sends per wake-up); the key is left out when this is unset
   */
  packetsPerSend?: number;
  /**
   * scale: after the sweep, the admission mode (bench/engine-admission.ts): pipelines created one
   * by one with audio flowing until the engine refuses, compared with the sweep's largest real-time N
   */
  admission?: boolean;
  /** where the sender programme and the rtp-counter binary are cached (default <tmpdir>/audioengine-bench) */
  cacheDir?: string;
  log?: (line: string) => void;
}

export { BENCH_PROCESSING };

export interface ReadyRun {
  cold: boolean;
  /** spawn -> first 200 of GET /health */
  healthMs: number;
  /** spawn -> first answer of GET /health, whatever its status (503 while GStreamer is checked) */
  listeningMs: number;
  /** `startup_ms` of the `ready` log line (the engine's own count, from createEngine) */
  startupMs: number;
  /** spawn -> `restored` log event (stored pipelines started; none here) */
  restoredMs: number;
}

export interface HttpLoad {
  endpoint: string;
  connections: number;
  durationS: number;
  requestsPerS: number;
  requests: number;
  errors: number;
  non2xx: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number };
}

export interface EngineControlResult {
  ready: {
    runs: ReadyRun[];
    warm: { healthMedianMs: number; healthMaxMs: number; startupMedianMs: number; startupMaxMs: number };
    cold: ReadyRun | null;
  };
  create: {
    count: number;
    postMs: LatencySummary;
    toRunningMs: LatencySummary;
    deleteMs: LatencySummary;
    /** sequential create + delete pairs per second (each starts and ends a real child) */
    pairsPerS: number;
  };
  rest: HttpLoad[];
  grpc: { call: string; summary: LatencySummary; callsPerS: number }[];
}

export interface ScalePipelineSample extends RtpWindowSample {
  id: string;
  cpuPct: number;
  rssMiB: number;
  srtLost: number;
  srtDropped: number;
  srtReceived: number;
  restarts: number;
  /** the clock bridge's underruns in the window, and the sender drift it reports at the end, ppm */
  underruns: number;
  /** at the window's end: sender-to-RTP latency and the bridge's depth above its reserve, s; ceiling episodes in the window */
  latencyS: number;
  depthS: number;
  ceilingHits: number;
  driftPpm: number;
  /** the half-width it states for that reading, ppm (about 95 % of readings hold the truth within it) */
  driftUncertaintyPpm: number;
  /** the drift it reported every 10 s from 60 s after its sender started: [s since then, ppm] */
  driftSeries: [number, number][];
}

/** One N of the engine's sweep (`accountedPctOfMachine` counts the engine process too). */
export interface ScaleStep extends ScaleStepFigures {
  engineCpuPct: number;
  engineRssMiB: number;
  /** s between the two scrapes the children's and the engine's CPU deltas come from (windowS: the counter's) */
  cpuWindowS: number;
  srt: { lost: number; dropped: number };
  /** sender-to-RTP latency and depth above the reserve at the window's end over the pipelines, s; ceiling episodes in the window */
  latencyS: { median: number; max: number };
  depthS: { median: number; max: number };
  ceilingHits: number;
  /** ms from the first create to every pipeline running (flowingMs: to every receiver carrying the programme) */
  startAllMs: number;
  /** real-time threads the clock bridge's guard moved to SCHED_OTHER during the step, by thread name */
  rtDemotions: Record<string, number>;
  /** the engine's underrun lines during the step: which pipeline, when (s after the senders started), how long, why */
  underrunsSaid: string[];
  pipelines: ScalePipelineSample[];
}

export interface ScaleResult {
  /** `command` as for one pipeline (for gst-shared: one branch shown, the process has one per pipeline) */
  sender: { kind: SenderKind; command: string[]; processes: 'one for all pipelines' | 'one per pipeline'; programme: string };
  receiver: { command: string[]; source: string; rcvbufBytes: number; nice: number };
  /** `rtp_packets_per_send` written in the engine config; null: not written (the engine's default) */
  rtpPacketsPerSend: number | null;
  steps: ScaleStep[];
  /** largest N measured real time (0 when none) */
  largestRealTimeN: number;
  stoppedEarly: boolean;
  processing: typeof BENCH_PROCESSING;
  /** the same sweep with one ffmpeg per pipeline in the engine's place (null: not asked for) */
  reference: ScaleReferenceResult | null;
}

export { SCALE_REFERENCE_KINDS, type ScaleReferenceKind };

/** The side-by-side reference of a scale run (`--reference ffmpeg|floor|passthrough|no-bridge`). */
export interface ScaleReferenceResult {
  kind: ScaleReferenceKind;
  /** the processes of one reference pipeline (two for the floor, one for the others); the ports shown as SRT_PORT and RTP_PORT */
  commands: string[][];
  /** SRT loss is not part of its judgement: why */
  srtStats: string;
  steps: ReferenceScaleStep[];
  /** largest N measured real time (0 when none) */
  largestRealTimeN: number;
  stoppedEarly: boolean;
  /** the engine's largest real-time N / the reference's, over the N swept (null when the reference had none) */
  engineOverReference: number | null;
}

export interface EngineBenchResult {
  quick: boolean;
  loadBefore: string;
  loadAfter: string;
  control: EngineControlResult | null;
  scale: ScaleResult | null;
  /** the admission mode and how it compares with the sweep (null when not run) */
  admission: (AdmissionBenchResult & { largestRealTimeN: number | null; acceptedOfCapacity: number | null }) | null;
}

interface Settings {
  quick: boolean;
  readyRuns: number;
  creates: number;
  loadS: number;
  connections: number;
  grpcCalls: number;
  scaleNs: number[];
  scaleRounds: number;
  controlPriority: number | undefined;
  windowS: number;
  settleS: number;
  sender: SenderKind;
  senderRate: number;
  reference: ScaleReferenceKind | undefined;
  packetsPerSend: number | undefined;
  admission: boolean;
  cacheDir: string;
  log: (line: string) => void;
}

function settings(opts: EngineBenchOptions): Settings {
  const quick = opts.quick === true;
  return {
    quick,
    readyRuns: opts.readyRuns ?? (quick ? 3 : 5),
    creates: opts.creates ?? (quick ? 5 : 20),
    loadS: opts.loadS ?? (quick ? 2 : 5),
    connections: opts.connections ?? 10,
    grpcCalls: opts.grpcCalls ?? (quick ? 100 : 500),
    scaleNs: opts.scaleNs ?? (quick ? [1, 8] : [1, 8, 16, 32, 64]),
    scaleRounds: opts.scaleRounds ?? (quick ? 1 : 3),
    controlPriority: opts.controlPriority,
    windowS: opts.windowS ?? (quick ? 5 : 20),
    settleS: opts.settleS ?? (quick ? 3 : 5),
    sender: opts.sender ?? 'gst-shared',
    senderRate: opts.senderRate ?? 1,
    reference: opts.reference,
    packetsPerSend: opts.packetsPerSend,
    admission: opts.admission === true,
    cacheDir: opts.cacheDir ?? path.join(tmpdir(), 'audioengine-bench'),
    log: opts.log ?? ((l: string) => process.stderr.write(`${l}\n`)),
  };
}

/** SRT latency of every benchmarked pipeline (and of the ffmpeg reference's listeners), ms. */
const SCALE_SRT_LATENCY_MS = 300;

function pipelineRequest(name: string, srtPort: number, outPort: number): unknown {
  return {
    name,
    input: { type: 'srt', port: srtPort, latency: SCALE_SRT_LATENCY_MS },
    processing: BENCH_PROCESSING,
    output: { type: 'rtp', host: '127.0.0.1', port: outPort },
  };
}

async function createPipeline(engine: BenchEngine, name: string, srtPort: number, outPort: number): Promise<string> {
  const res = await engine.request('POST', '/api/v1/pipelines', pipelineRequest(name, srtPort, outPort));
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  const { id } = JSON.parse(res.text) as { id: string };
  return id;
}

async function withTempDir<T>(prefix: string, body: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  try {
    return await body(dir);
  } finally {
    await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------
// ready time

/** Polls GET /health every 5 ms: when it first answered at all, and when it first answered 200. */
async function pollHealth(engine: BenchEngine, timeoutMs: number): Promise<{ firstAnswerAt: number; okAt: number }> {
  let firstAnswerAt: number | undefined;
  const until = performance.now() + timeoutMs;
  let exited = false;
  void engine.exited.then(() => {
    exited = true;
  });
  for (;;) {
    try {
      const res = await fetch(`${engine.url}/health`);
      await res.arrayBuffer();
      const now = performance.now();
      firstAnswerAt ??= now;
      if (res.status === 200) return { firstAnswerAt, okAt: now };
    } catch {
      // not listening yet
    }
    if (exited) throw new Error(`engine exited before /health answered: ${engine.stderr.slice(-10).join('\n')}`);
    if (performance.now() > until) throw new Error(`GET /health did not answer 200 within ${timeoutMs} ms`);
    await sleep(5);
  }
}

async function readyBench(s: Settings, root: string): Promise<EngineControlResult['ready'] & { registry?: string }> {
  const dir = path.join(root, 'ready');
  const runs: ReadyRun[] = [];
  let registry: string | undefined;
  for (let i = 0; i < s.readyRuns + 1; i++) {
    const engine = await BenchEngine.spawn({ dir });
    try {
      const health = await pollHealth(engine, 30_000);
      const ready = await engine.waitForLog((l) => l.event === 'ready', 30_000);
      await engine.ready(30_000);
      const idx = engine.logs.findIndex((l) => l.event === 'restored');
      const run: ReadyRun = {
        cold: i === 0,
        healthMs: health.okAt - engine.spawnedAt,
        listeningMs: health.firstAnswerAt - engine.spawnedAt,
        startupMs: typeof ready.startup_ms === 'number' ? ready.startup_ms : Number.NaN,
        restoredMs: (engine.arrivedAt[idx] ?? Number.NaN) - engine.spawnedAt,
      };
      runs.push(run);
      s.log(`engine ready ${i === 0 ? '(cold registry)' : `${i}/${s.readyRuns}`}: /health answers after ${run.listeningMs.toFixed(0)} ms, 200 after ${run.healthMs.toFixed(0)} ms, startup_ms ${run.startupMs}, restored ${run.restoredMs.toFixed(0)} ms`);
      registry ??= await engine.registryFile();
    } finally {
      await engine.stop();
    }
  }
  const warm = runs.filter((r) => !r.cold);
  return {
    runs,
    cold: runs.find((r) => r.cold) ?? null,
    warm: {
      healthMedianMs: median(warm.map((r) => r.healthMs)),
      healthMaxMs: Math.max(...warm.map((r) => r.healthMs)),
      startupMedianMs: median(warm.map((r) => r.startupMs)),
      startupMaxMs: Math.max(...warm.map((r) => r.startupMs)),
    },
    registry,
  };
}

// ---------------------------------------------------------------------------------------------
// create -> running, REST under load, gRPC

async function createBench(s: Settings, engine: BenchEngine): Promise<EngineControlResult['create']> {
  const post: number[] = [];
  const toRunning: number[] = [];
  const del: number[] = [];
  const started = performance.now();
  for (let i = 0; i < s.creates; i++) {
    const port = await freeUdpPort();
    const t0 = performance.now();
    const id = await createPipeline(engine, `bench create ${i}`, port, 9);
    const t1 = performance.now();
    await engine.waitForLog((l) => l.pipeline_id === id && l.event === 'state' && l.to === 'running', 20_000);
    const idx = engine.logs.findIndex((l) => l.pipeline_id === id && l.event === 'state' && l.to === 'running');
    const t2 = engine.arrivedAt[idx] ?? performance.now();
    const t3 = performance.now();
    const res = await engine.request('DELETE', `/api/v1/pipelines/${id}`);
    const t4 = performance.now();
    if (res.status !== 204) throw new Error(`delete ${id}: ${res.status} ${res.text}`);
    post.push(t1 - t0);
    toRunning.push(t2 - t0);
    del.push(t4 - t3);
  }
  const elapsedS = (performance.now() - started) / 1000;
  const result = {
    count: s.creates,
    postMs: summarize(post),
    toRunningMs: summarize(toRunning),
    deleteMs: summarize(del),
    pairsPerS: s.creates / elapsedS,
  };
  s.log(
    `create -> running: median ${result.toRunningMs.p50Ms.toFixed(0)} ms, p95 ${result.toRunningMs.p95Ms.toFixed(0)} ms ` +
      `(POST ${result.postMs.p50Ms.toFixed(1)} ms, DELETE ${result.deleteMs.p50Ms.toFixed(0)} ms) over ${s.creates}`,
  );
  return result;
}

interface AutocannonJson {
  requests: { average: number; total: number };
  latency: { p50: number; p90: number; p99: number; max: number; average: number };
  errors: number;
  timeouts: number;
  non2xx: number;
}

const AUTOCANNON = path.join(ROOT, 'node_modules', 'autocannon', 'autocannon.js');

/** autocannon as its own process (`--json`), bounded by connections and seconds. */
async function autocannon(url: string, connections: number, durationS: number): Promise<AutocannonJson> {
  const child = spawn(process.execPath, [AUTOCANNON, '--json', '-c', String(connections), '-d', String(durationS), url], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), (durationS + 30) * 1000);
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (c) => resolve(c));
  }).finally(() => clearTimeout(killer));
  if (code !== 0) throw new Error(`autocannon failed (${String(code)}): ${err.trim()}`);
  const line = out.trim().split('\n').pop() ?? '';
  return JSON.parse(line) as AutocannonJson;
}

async function restLoad(s: Settings, engine: BenchEngine, endpoint: string): Promise<HttpLoad> {
  const r = await autocannon(`${engine.url}${endpoint}`, s.connections, s.loadS);
  const load: HttpLoad = {
    endpoint,
    connections: s.connections,
    durationS: s.loadS,
    requestsPerS: r.requests.average,
    requests: r.requests.total,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    latencyMs: { p50: r.latency.p50, p90: r.latency.p90, p99: r.latency.p99, max: r.latency.max, mean: r.latency.average },
  };
  s.log(`REST GET ${endpoint}: ${load.requestsPerS.toFixed(0)} req/s, p50 ${load.latencyMs.p50} ms, p99 ${load.latencyMs.p99} ms (${s.connections} connections, ${s.loadS} s)`);
  return load;
}

async function grpcBench(s: Settings, engine: BenchEngine): Promise<EngineControlResult['grpc']> {
  const client = new TestClient(engine.grpcPort);
  try {
    const calls: [string, () => Promise<unknown>][] = [
      ['GetHealth', () => client.health()],
      ['ListPipelines', () => client.list()],
    ];
    const out: EngineControlResult['grpc'] = [];
    for (const [name, call] of calls) {
      for (let i = 0; i < 50; i++) await call(); // warm-up: connection, JIT
      const times: number[] = [];
      const started = performance.now();
      for (let i = 0; i < s.grpcCalls; i++) {
        const t0 = performance.now();
        await call();
        times.push(performance.now() - t0);
      }
      const callsPerS = s.grpcCalls / ((performance.now() - started) / 1000);
      const summary = summarize(times);
      out.push({ call: name, summary, callsPerS });
      s.log(`gRPC ${name}: p50 ${summary.p50Ms.toFixed(2)} ms, p99 ${summary.p99Ms.toFixed(2)} ms, ${callsPerS.toFixed(0)} sequential calls/s`);
    }
    return out;
  } finally {
    client.close();
  }
}

async function controlBench(s: Settings, root: string): Promise<{ result: EngineControlResult; registry: string | undefined }> {
  const ready = await readyBench(s, root);
  const { registry, ...readyResult } = ready;
  const engine = await BenchEngine.spawn({ dir: path.join(root, 'control'), registryFrom: registry, maxPipelines: 64 });
  try {
    await engine.ready();
    const create = await createBench(s, engine);
    // 8 idle pipelines (no sender), so that the list has something to serialise
    for (let i = 0; i < 8; i++) await createPipeline(engine, `bench listed ${i}`, await freeUdpPort(), 9);
    const rest = [await restLoad(s, engine, '/health'), await restLoad(s, engine, '/api/v1/pipelines')];
    const grpc = await grpcBench(s, engine);
    return { result: { ready: readyResult, create, rest, grpc }, registry };
  } finally {
    await engine.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// scale

function value(table: MetricTable, name: string, id = ''): number {
  return table.get(name)?.get(id) ?? 0;
}

interface ScaleRig {
  programme: string;
  registry: string | undefined;
  counterBinary: string;
  /** SO_RCVBUF and nice value the counter reported (the last step's) */
  rcvbufBytes: number;
  nice: number;
}

/** What the engine said (warnings and errors) of the pipelines that restarted: the 3 most frequent, counted. */
function restartsSaid(engine: BenchEngine, samples: readonly ScalePipelineSample[]): string[] {
  const restarted = new Set(samples.filter((p) => p.restarts > 0).map((p) => p.id));
  const said = engine.logs.filter((l) => l.level >= 40 && typeof l.pipeline_id === 'string' && restarted.has(l.pipeline_id)).map((l) => l.msg);
  const counts = new Map<string, number>();
  for (const m of said) counts.set(m, (counts.get(m) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([m, c]) => `${c}x "${m}"`);
}

/** The clock bridge's guard lines on the children's stderr ("clockbridge: thread b:src (tid …) used 200 ms of real-time CPU …"), counted by thread name. */
function rtDemotionsSaid(engine: BenchEngine): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const l of engine.logs) {
    const m = /clockbridge: thread (.+?) \(tid \d+\) used \d+ ms of real-time CPU without blocking/.exec(l.msg);
    if (m?.[1] !== undefined) counts[m[1]] = (counts[m[1]] ?? 0) + 1;
  }
  return counts;
}

/**
 * The engine's underrun log lines (src/pipelines/child-reports.ts, event "underrun"), each as
 * "pipeline K at T s: H ms silent (last hole L ms), cause": K the pipeline's place in the step,
 * T seconds after the senders started (when the line reached the bench).
 */
function underrunsSaid(engine: BenchEngine, ids: readonly string[], sendersAt: number): string[] {
  return engine.logs.flatMap((l, i) => {
    if (l.event !== 'underrun' || typeof l.pipeline_id !== 'string') return [];
    const at = ((engine.arrivedAt[i] ?? sendersAt) - sendersAt) / 1000;
    return [`pipeline ${ids.indexOf(l.pipeline_id)} at ${at.toFixed(0)} s: ${String(l.silence_ms)} ms silent (last hole ${String(l.last_ms)} ms), ${String(l.cause)}`];
  });
}

async function scaleStep(s: Settings, root: string, n: number, round: number, rig: ScaleRig): Promise<ScaleStep> {
  const engine = await BenchEngine.spawn({
    dir: path.join(root, `scale-${n}-${round}`),
    registryFrom: rig.registry,
    maxPipelines: Math.max(64, n),
    rtpPacketsPerSend: s.packetsPerSend,
    admission: false, // the plain sweep measures what the host can carry
    extraToml: s.controlPriority === undefined ? [] : [`control_priority = ${s.controlPriority}`],
  });
  let counters: RtpCounters | undefined;
  let senders: Sender[] = [];
  let loadBefore = '';
  const pipelines: { id: string; srtPort: number; rtpPort: number }[] = [];
  let sendersAt = Number.NaN;
  try {
    loadBefore = await loadAverage();
    await engine.ready();
    counters = await RtpCounters.start(rig.counterBinary, n);
    rig.rcvbufBytes = counters.rcvbufBytes;
    rig.nice = counters.nice;
    // every pipeline created at once, as a restored host or a playout system's set-up does
    const srtPorts: number[] = [];
    while (srtPorts.length < counters.ports.length) srtPorts.push(await freeUdpPort()); // each handed out once
    const t0 = performance.now();
    const ids = await Promise.all(counters.ports.map((rtpPort, i) => createPipeline(engine, `bench scale ${i}`, srtPorts[i] ?? 0, rtpPort)));
    counters.ports.forEach((rtpPort, i) => pipelines.push({ id: ids[i] ?? '', srtPort: srtPorts[i] ?? 0, rtpPort }));
    const running = new Set<string>();
    await engine.waitForLog((l) => {
      if (l.event === 'state' && l.to === 'running' && typeof l.pipeline_id === 'string') running.add(l.pipeline_id);
      return pipelines.every((p) => running.has(p.id));
    }, 60_000 + 1000 * n).catch(() => {
      // the predicate sees only new lines; lines before the wait were in engine.logs
      for (const l of engine.logs) if (l.event === 'state' && l.to === 'running' && typeof l.pipeline_id === 'string') running.add(l.pipeline_id);
      if (!pipelines.every((p) => running.has(p.id))) {
        const late = pipelines.filter((p) => !running.has(p.id)).map((p) => p.id);
        const why = engine.logs.filter((l) => typeof l.pipeline_id === 'string' && late.includes(l.pipeline_id) && l.level >= 40).slice(-5).map((l) => l.msg);
        throw new Error(`N=${n}: not every pipeline reached running (${late.length} did not: ${why.join(' | ')})`);
      }
    });
    const startAllMs = performance.now() - t0;
    sendersAt = performance.now();
    senders = Sender.startAll(s.sender, rig.programme, pipelines.map((p) => p.srtPort), s.sender === 'gst-shared' ? await freeUdpPort() : 0, s.senderRate);
    // the settle counts from the programme at every receiver: at 24 pipelines on 2 cores it came
    // 13-27 s after the shared sender started (each child loads its decoder's libraries at its
    // first audio, all at once), and a window opened before then judged that start-up
    // a receiver still without the programme is a reason, as in the reference's step: the
    // step is measured and judged, and the sweep stops there rather than ending in an error
    const firstAudio = new Map<number, number>();
    const notFlowing = await waitForAudio(counters, 60_000, firstAudio);
    const firstAudioS = [...firstAudio.values()].map((at) => (at - sendersAt) / 1000).sort((a, b) => a - b);
    const flowingMs = performance.now() - t0;
    await sleep(s.settleS * 1000);

    // the window
    // The children's and the engine's CPU are read by the engine when it answers a scrape: their
    // deltas span from this scrape to the one after the window, which on a saturated host can
    // be seconds longer than the counter's window (each scrape's time is its call's midpoint).
    const scrape0 = await timedScrape(engine);
    const m0 = scrape0.table;
    const rigWindow = await openRigWindow(senders.map((x) => x.pid), counters);
    // the drift each bridge reports, every 10 s once it has had 60 s of the sender (its estimate's
    // settling time, docs/elements-clockbridge.md)
    const drifts = new Map<string, [number, number][]>(pipelines.map((p) => [p.id, []]));
    const windowEnd = rigWindow.startedAt + s.windowS * 1000;
    for (let now = performance.now(); now < windowEnd; now = performance.now()) {
      await sleep(Math.min(10_000, windowEnd - now));
      if (performance.now() - sendersAt < 60_000 || performance.now() >= windowEnd - 1000) continue;
      const m = await engine.metrics();
      const at = Math.round((performance.now() - sendersAt) / 1000);
      for (const p of pipelines) drifts.get(p.id)?.push([at, value(m, 'audio_engine_pipeline_input_clock_drift_ppm', p.id)]);
    }
    const win = await rigWindow.close();
    const scrape1 = await timedScrape(engine);
    const m1 = scrape1.table;
    const windowS = win.windowS;
    const cpuWindowS = (scrape1.atMs - scrape0.atMs) / 1000;

    const samples: ScalePipelineSample[] = pipelines.map((p) => {
      const d = (name: string): number => value(m1, name, p.id) - value(m0, name, p.id);
      return {
        id: p.id,
        cpuPct: (100 * d('audio_engine_pipeline_child_cpu_seconds_total')) / cpuWindowS,
        rssMiB: value(m1, 'audio_engine_pipeline_child_resident_memory_bytes', p.id) / 2 ** 20,
        ...rtpWindowSample(win.snapshot, p.rtpPort),
        srtLost: d('audio_engine_pipeline_srt_packets_lost_total'),
        srtDropped: d('audio_engine_pipeline_srt_packets_dropped_total'),
        srtReceived: d('audio_engine_pipeline_srt_packets_received_total'),
        restarts: d('audio_engine_pipeline_restarts_total'),
        underruns: d('audio_engine_pipeline_jitter_buffer_underruns_total'),
        latencyS: value(m1, 'audio_engine_pipeline_latency_seconds', p.id),
        depthS: value(m1, 'audio_engine_pipeline_jitter_depth_seconds', p.id),
        ceilingHits: d('audio_engine_pipeline_jitter_ceiling_hits_total'),
        driftPpm: value(m1, 'audio_engine_pipeline_input_clock_drift_ppm', p.id),
        driftUncertaintyPpm: value(m1, 'audio_engine_pipeline_input_clock_drift_uncertainty_ppm', p.id),
        driftSeries: drifts.get(p.id) ?? [],
      };
    });
    const reasons = realTimeReasons(samples, { senders, restartsSaid: restartsSaid(engine, samples) });
    if (notFlowing > 0) reasons.unshift(`${notFlowing} receiver(s) got no audio in 60 s`);
    const rtp = rtpTotals(samples);
    const srt = { lost: samples.reduce((a, p) => a + Math.max(0, p.srtLost), 0), dropped: samples.reduce((a, p) => a + Math.max(0, p.srtDropped), 0) };

    const cpu = samples.map((p) => p.cpuPct);
    const pipelineRssMiB = spread(samples.map((p) => p.rssMiB));
    const senderSum = win.senderCpuPct;
    const engineCpuPct = (100 * (value(m1, 'audio_engine_process_cpu_seconds_total') - value(m0, 'audio_engine_process_cpu_seconds_total'))) / cpuWindowS;
    const { receiversCpuPct, benchCpuPct } = win;
    const pipelineCpuPct = spread(cpu);
    const cpuSum = pipelineCpuPct.sum;
    const latency = spread(samples.map((p) => p.latencyS));
    const depth = spread(samples.map((p) => p.depthS));
    const step: ScaleStep = {
      n,
      windowS,
      latencyS: { median: latency.median, max: latency.max },
      depthS: { median: depth.median, max: depth.max },
      ceilingHits: samples.reduce((a, p) => a + p.ceilingHits, 0),
      cpuWindowS,
      realTime: reasons.length === 0,
      reasons,
      pipelineCpuPct,
      pipelineRssMiB: { median: pipelineRssMiB.median, max: pipelineRssMiB.max },
      engineCpuPct,
      engineRssMiB: value(m1, 'audio_engine_process_resident_memory_bytes') / 2 ** 20,
      senderCpuPct: { perSender: senderSum / n, sum: senderSum, processes: senders.length },
      receiversCpuPct,
      benchCpuPct,
      accountedPctOfMachine: (cpuSum + engineCpuPct + senderSum + receiversCpuPct + benchCpuPct) / cpus().length,
      rtp,
      srt,
      startAllMs,
      flowingMs,
      loadBefore,
      rtDemotions: rtDemotionsSaid(engine),
      underrunsSaid: underrunsSaid(engine, pipelines.map((p) => p.id), sendersAt),
      pipelines: samples,
    };
    const demoted = Object.entries(step.rtDemotions).map(([thread, c]) => `${c}x ${thread}`);
    // every bridge's readings every 10 s, and at the end
    const driftReadings = samples.flatMap((p) => [...p.driftSeries.map(([, v]) => v), p.driftPpm]);
    s.log(
      `scale N=${n} round ${round}: ${step.realTime ? 'real time' : `NOT real time (${reasons.join('; ')})`}; per pipeline CPU median ` +
        `${step.pipelineCpuPct.median.toFixed(1)} % (max ${step.pipelineCpuPct.max.toFixed(1)} %) over ${cpuWindowS.toFixed(1)} s between scrapes, RSS ${step.pipelineRssMiB.median.toFixed(1)} MiB; ` +
        `engine ${step.engineCpuPct.toFixed(1)} %; senders ${step.senderCpuPct.sum.toFixed(2)} % (${step.senderCpuPct.perSender.toFixed(2)} % per pipeline, ` +
        `${senders.length} process(es)); receivers ${step.receiversCpuPct.toFixed(2)} %; bench ${step.benchCpuPct.toFixed(2)} %; ` +
        `all of it ${step.accountedPctOfMachine.toFixed(0)} % of the machine; RTP ${step.rtp.minRatePerS.toFixed(0)}-${step.rtp.maxRatePerS.toFixed(0)}/s; ` +
        `underruns ${samples.reduce((a, p) => a + p.underruns, 0)} in ${samples.filter((p) => p.underruns > 0).length} pipeline(s); ` +
        `latency ${step.latencyS.median.toFixed(3)} s median, ${step.latencyS.max.toFixed(3)} s max (depth above the reserve at most ${(1000 * step.depthS.max).toFixed(0)} ms, ${step.ceilingHits} ceiling episode(s)); ` +
        `real-time threads demoted: ${demoted.length > 0 ? demoted.join(', ') : 'none'}; ` +
        `drift ${driftRange(samples.map((p) => p.driftPpm))} at the end (${driftCoverage(samples, (s.senderRate - 1) * 1e6)}), ${driftRange(driftReadings)} ` +
        `every 10 s from 60 s after the senders started (the senders' truth: ${((s.senderRate - 1) * 1e6).toFixed(0)} ppm against the host clock); ` +
        (notFlowing > 0
          ? `the programme at ${n - notFlowing} of ${n} receivers 60 s after the senders started`
          : `the programme at every receiver ${((flowingMs - startAllMs) / 1000).toFixed(1)} s after the senders started`) +
        ` (the first at ${(firstAudioS[0] ?? Number.NaN).toFixed(1)} s, the median at ${(firstAudioS[Math.floor(firstAudioS.length / 2)] ?? Number.NaN).toFixed(1)} s)` +
        `, the window from ${s.settleS} s later`,
    );
    for (const line of step.underrunsSaid.slice(0, 20)) s.log(`scale N=${n} round ${round}: underrun: ${line}`);
    if (step.underrunsSaid.length > 20) s.log(`scale N=${n} round ${round}: ... and ${step.underrunsSaid.length - 20} more underrun lines (in the JSON)`);
    return step;
  } catch (error) {
    // a saturated step starves the counter: judged, not an end of the run
    if (!(error instanceof CounterUnanswered)) throw error;
    const none = Number.NaN;
    const step: ScaleStep = {
      ...unmeasuredFigures(n, loadBefore),
      engineCpuPct: none,
      engineRssMiB: none,
      cpuWindowS: none,
      srt: { lost: none, dropped: none },
      latencyS: { median: none, max: none },
      depthS: { median: none, max: none },
      ceilingHits: none,
      startAllMs: none,
      rtDemotions: rtDemotionsSaid(engine),
      underrunsSaid: underrunsSaid(engine, pipelines.map((p) => p.id), sendersAt),
      pipelines: [],
    };
    s.log(`scale N=${n} round ${round}: NOT real time (${step.reasons.join('; ')}); the engine's underrun lines: ${step.underrunsSaid.length} (in the JSON)`);
    return step;
  } finally {
    await stopAll(senders);
    await engine.stop();
    await counters?.stop();
    // BENCH_ENGINE_LOGS=DIR keeps each step's engine log lines (with the bench's arrival time, s
    // after the senders started) for a closer look: scale-N-ROUND.jsonl
    const keep = process.env.BENCH_ENGINE_LOGS;
    if (keep !== undefined && keep !== '') {
      const lines = engine.logs.map((l, i) => JSON.stringify({ ...l, bench_s: ((engine.arrivedAt[i] ?? Number.NaN) - sendersAt) / 1000 }));
      await mkdir(keep, { recursive: true });
      await writeFile(path.join(keep, `scale-${n}-${round}.jsonl`), `${lines.join('\n')}\n`);
    }
  }
}

/**
 * The range of drift readings, ppm, over those the bridges knew; NaN is a drift a bridge does not
 * know yet (a busy host's arrivals before its long view, docs/clock.md), counted apart.
 */
export function driftRange(readings: number[]): string {
  const known = readings.filter((v) => Number.isFinite(v));
  const unknown = readings.length - known.length;
  const range = known.length === 0 ? 'none known' : `${Math.min(...known).toFixed(1)}..${Math.max(...known).toFixed(1)} ppm`;
  return unknown === 0 ? range : `${range} (${unknown} of ${readings.length} readings not known yet)`;
}

/** How many of the bridges' last drift readings hold the senders' truth within their stated uncertainty. */
export function driftCoverage(samples: readonly { driftPpm: number; driftUncertaintyPpm: number }[], truthPpm: number): string {
  const known = samples.filter((p) => Number.isFinite(p.driftPpm) && Number.isFinite(p.driftUncertaintyPpm));
  const within = known.filter((p) => Math.abs(p.driftPpm - truthPpm) <= p.driftUncertaintyPpm).length;
  const widths = known.map((p) => p.driftUncertaintyPpm);
  return `${within} of ${known.length} known within their stated uncertainty${widths.length > 0 ? ` (±${Math.min(...widths).toFixed(1)}..${Math.max(...widths).toFixed(1)} ppm)` : ''}`;
}

/** The ffmpeg reference's job: the benchmarked pipelines' (BENCH_PROCESSING, the same SRT latency). */
function referenceJob(): Pick<ReferenceScaleSetup, 'latencyMs' | 'targetLufs' | 'bands'> {
  const [loudness, eq] = BENCH_PROCESSING;
  return { latencyMs: SCALE_SRT_LATENCY_MS, targetLufs: loudness?.target ?? -23, bands: eq?.bands ?? [] };
}

/**
 * The sweep: at each N the engine's step, then (with a reference) the reference's step; each kind
 * stops at its own first N that is not real time, the other goes on.
 */
async function scaleBench(s: Settings, root: string, registry: string | undefined): Promise<ScaleResult> {
  const rig: ScaleRig = { programme: await programmeTs(s.cacheDir), registry, counterBinary: await rtpCounterBinary(s.cacheDir), rcvbufBytes: 0, nice: 0 };
  const setup: ReferenceScaleSetup | undefined = s.reference === undefined ? undefined : {
    kind: s.reference, programme: rig.programme, counterBinary: rig.counterBinary, sender: s.sender, senderRate: s.senderRate,
    settleS: s.settleS, windowS: s.windowS, ...referenceJob(),
    floorSender: s.reference === 'floor' ? await benchBinary(FLOOR_SENDER_SOURCE, s.cacheDir) : '',
    pluginPath: path.join(ROOT, 'gst-plugins', 'build'),
    compileOptions: { ...COST_COMPILE_OPTIONS, packetsPerSend: s.packetsPerSend ?? COST_COMPILE_OPTIONS.packetsPerSend },
    log: s.log,
  };
  if (setup?.kind === 'ffmpeg' && s.windowS < 10) {
    s.log(`scale: a ${s.windowS} s window is short for the ffmpeg reference: it sends bursts of about 100 packets (100 ms), so its rate over the window can be off by ${(10 / s.windowS).toFixed(1)} % (the limit is 2 %)`);
  }
  const { first: steps, second: referenceSteps } = await sweepSideBySide(
    s.scaleNs,
    async (n, round) => ({ ...(await scaleStep(s, root, n, round, rig)), round }),
    setup === undefined ? null : async (n, round) => ({ ...(await referenceScaleStep(setup, n)), round }),
    s.scaleRounds,
  );
  const engineEnd = sweepEnd(steps, s.scaleNs);
  let reference: ScaleReferenceResult | null = null;
  if (setup !== undefined) {
    const end = sweepEnd(referenceSteps, s.scaleNs);
    reference = {
      kind: setup.kind,
      commands: referenceScaleCommands(setup),
      srtStats: referenceSrtStats(setup.kind),
      steps: referenceSteps,
      ...end,
      engineOverReference: end.largestRealTimeN === 0 ? null : engineEnd.largestRealTimeN / end.largestRealTimeN,
    };
  }
  return {
    sender: {
      kind: s.sender,
      command: senderLaunch(senderCommand(s.sender, rig.programme, [0], s.sender === 'gst-shared' ? 1 : 0, s.senderRate))
        .map((a) => a.replace(':0?', ':PORT?').replace('localport=1', 'localport=LOCALPORT')),
      processes: s.sender === 'gst-shared' ? 'one for all pipelines' : 'one per pipeline',
      programme: rig.programme,
    },
    receiver: { command: [rig.counterBinary, 'N'], source: path.relative(ROOT, RTP_COUNTER_SOURCE), rcvbufBytes: rig.rcvbufBytes, nice: rig.nice },
    rtpPacketsPerSend: s.packetsPerSend ?? null,
    steps,
    ...engineEnd,
    processing: BENCH_PROCESSING,
    reference,
  };
}

/** Warms the engine's GStreamer registry once (a scale run without the control part). */
async function warmRegistry(root: string): Promise<string | undefined> {
  const engine = await BenchEngine.spawn({ dir: path.join(root, 'warm') });
  try {
    await engine.ready(30_000);
    return await engine.registryFile();
  } finally {
    await engine.stop();
  }
}

export async function runEngineBench(opts: EngineBenchOptions = {}): Promise<EngineBenchResult> {
  const s = settings(opts);
  const parts = opts.parts ?? { engine: true, scale: true };
  const loadBefore = await loadAverage();
  return withTempDir('audioengine-enginebench-', async (root) => {
    let control: EngineControlResult | null = null;
    let registry: string | undefined;
    if (parts.engine) {
      const c = await controlBench(s, root);
      control = c.result;
      registry = c.registry;
    }
    let scale: ScaleResult | null = null;
    let admission: EngineBenchResult['admission'] = null;
    if (parts.scale) {
      registry ??= await warmRegistry(root);
      scale = s.scaleNs.length > 0 ? await scaleBench(s, root, registry) : null;
      if (s.admission) {
        const result = await admissionBench({
          root,
          registry,
          counterBinary: await rtpCounterBinary(s.cacheDir),
          programme: await programmeTs(s.cacheDir),
          sender: s.sender === 'gst-shared' ? 'gst' : s.sender,
          processing: BENCH_PROCESSING,
          packetsPerSend: s.packetsPerSend,
          settleS: s.settleS,
          windowS: s.windowS,
          maxPipelines: 64,
          log: s.log,
        });
        const capacity = scale?.largestRealTimeN ?? null;
        admission = { ...result, largestRealTimeN: capacity, acceptedOfCapacity: capacity === null || capacity === 0 ? null : result.accepted / capacity };
      }
    }
    return { quick: s.quick, loadBefore, loadAfter: await loadAverage(), control, scale, admission };
  });
}

// ---------------------------------------------------------------------------------------------
// report

function f(x: number, digits = 1): string {
  return Number.isFinite(x) ? x.toFixed(digits) : 'n/a';
}

/** "k of R rounds" at N. */
function wholeRounds(steps: readonly { n: number; realTime: boolean }[], n: number): string {
  const at = steps.filter((x) => x.n === n);
  return at.length === 0 ? '-' : `${at.filter((x) => x.realTime).length} of ${at.length} rounds`;
}

/** The median over the rounds at N of each round's per-pipeline CPU median, % of a core. */
function roundsMedianCpu(steps: readonly { n: number; pipelineCpuPct: { median: number } }[], n: number): number {
  const at = steps.filter((x) => x.n === n && Number.isFinite(x.pipelineCpuPct.median)).map((x) => x.pipelineCpuPct.median);
  return at.length === 0 ? Number.NaN : median(at);
}

/** Per pipeline CPU at the largest N over the smallest (the bar: at most 1.25 from 8 to 32). */
function costGrowth(steps: readonly { n: number; pipelineCpuPct: { median: number } }[], ns: readonly number[]): string[] {
  const measured = ns.filter((n) => Number.isFinite(roundsMedianCpu(steps, n)));
  const lo = measured[0];
  const hi = measured.at(-1);
  if (lo === undefined || hi === undefined || lo === hi) return [];
  return [`per pipeline CPU at ${hi} / at ${lo}: ${f(roundsMedianCpu(steps, hi), 2)} / ${f(roundsMedianCpu(steps, lo), 2)} = **${f(roundsMedianCpu(steps, hi) / roundsMedianCpu(steps, lo), 2)}**`];
}

/** The scale sweep beside its reference, per N of either sweep, and the largest real-time N of each. */
function referenceTable(sc: ScaleResult, ref: ScaleReferenceResult): string {
  const ns = [...new Set([...sc.steps.map((x) => x.n), ...ref.steps.map((x) => x.n)])].sort((a, b) => a - b);
  const rounds = Math.max(1, ...[...sc.steps, ...ref.steps].map((x) => x.round ?? 1));
  const yes = (st: { realTime: boolean } | undefined): string => (st === undefined ? '-' : st.realTime ? 'yes' : '**no**');
  const cpu = (st: { pipelineCpuPct: { median: number; max: number } } | undefined): string =>
    st === undefined ? '-' : `${f(st.pipelineCpuPct.median)} (${f(st.pipelineCpuPct.max)})`;
  const lines = [
    `| N | round | engine real time | engine CPU % per pipeline, median (max) | ${ref.kind} real time | ${ref.kind} CPU % per pipeline, median (max) | ${ref.kind} RSS MiB median | ${ref.kind} senders CPU % (per pipeline) | ${ref.kind} RTP pkt/s min-max | ${ref.kind} RTP gaps | ${ref.kind}: why not |`,
    '|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---|',
  ];
  for (const n of ns) for (let round = 1; round <= rounds; round++) {
    const e = sc.steps.find((x) => x.n === n && (x.round ?? 1) === round);
    const x = ref.steps.find((y) => y.n === n && (y.round ?? 1) === round);
    if (e === undefined && x === undefined) continue;
    lines.push(
      `| ${n} | ${round} | ${yes(e)} | ${cpu(e)} | ${yes(x)} | ${cpu(x)} | ${x === undefined ? '-' : f(x.pipelineRssMiB.median)} | ` +
        `${x === undefined ? '-' : `${f(x.senderCpuPct.sum, 2)} (${f(x.senderCpuPct.perSender, 2)})`} | ` +
        `${x === undefined ? '-' : `${f(x.rtp.minRatePerS, 0)}-${f(x.rtp.maxRatePerS, 0)}`} | ${x === undefined ? '-' : f(x.rtp.totalGaps, 0)} | ${x?.reasons.join('; ') ?? ''} |`,
    );
  }
  const ratio = ref.engineOverReference === null ? 'n/a' : `${f(ref.engineOverReference, 2)}`;
  lines.push(
    '',
    ...ns.map((n) => `- N = ${n}: engine whole in ${wholeRounds(sc.steps, n)}, ${ref.kind} in ${wholeRounds(ref.steps, n)}; ` +
      `per pipeline CPU (median of the rounds' medians) engine ${f(roundsMedianCpu(sc.steps, n), 2)} %, ${ref.kind} ${f(roundsMedianCpu(ref.steps, n), 2)} %, ` +
      `engine/${ref.kind} **${f(roundsMedianCpu(sc.steps, n) / roundsMedianCpu(ref.steps, n), 2)}**`),
    ...costGrowth(sc.steps, ns).map((l) => `- engine: ${l}`),
    ...costGrowth(ref.steps, ns).map((l) => `- ${ref.kind}: ${l}`),
    `- largest N in real time: engine **${sc.largestRealTimeN}**, ${ref.kind} **${ref.largestRealTimeN}**, engine/${ref.kind} ` +
      `${sc.largestRealTimeN}/${ref.largestRealTimeN} = **${ratio}** (N swept: ${ns.join(', ')}${sc.stoppedEarly ? '; the engine\'s sweep stopped at its first N that was not' : ''}` +
      `${ref.stoppedEarly ? `; the ${ref.kind} sweep stopped at its first N that was not` : ''})`,
    `- reference: ${ref.commands.map((c) => `\`${c.join(' ')}\``).join(' and ')} per pipeline, the same sender, counter, settle and window; SRT loss ${ref.srtStats}`,
  );
  return lines.join('\n');
}

/** The markdown tables of an engine bench result. */
export function engineTable(r: EngineBenchResult): string {
  const lines: string[] = [];
  const c = r.control;
  if (c !== null) {
    lines.push(
      '| engine | measure | p50 / median | p95 | p99 | max | rate |',
      '|---|---|---:|---:|---:|---:|---:|',
      `| ready | spawn -> GET /health 200 (warm, ${c.ready.runs.length - 1} runs) | ${f(c.ready.warm.healthMedianMs, 0)} ms | | | ${f(c.ready.warm.healthMaxMs, 0)} ms | |`,
      `| ready | \`startup_ms\` of the \`ready\` log line (warm) | ${f(c.ready.warm.startupMedianMs, 0)} ms | | | ${f(c.ready.warm.startupMaxMs, 0)} ms | |`,
      `| ready | first start, cold GStreamer registry: /health 200, startup_ms | ${f(c.ready.cold?.healthMs ?? Number.NaN, 0)} ms | | | ${f(c.ready.cold?.startupMs ?? Number.NaN, 0)} ms | |`,
      `| create | POST -> child \`state\` \`to: running\` (${c.create.count}) | ${f(c.create.toRunningMs.p50Ms, 0)} ms | ${f(c.create.toRunningMs.p95Ms, 0)} ms | ${f(c.create.toRunningMs.p99Ms, 0)} ms | ${f(c.create.toRunningMs.maxMs, 0)} ms | |`,
      `| create | POST /api/v1/pipelines answer (201) | ${f(c.create.postMs.p50Ms)} ms | ${f(c.create.postMs.p95Ms)} ms | ${f(c.create.postMs.p99Ms)} ms | ${f(c.create.postMs.maxMs)} ms | |`,
      `| delete | DELETE /api/v1/pipelines/{id} (204, child gone) | ${f(c.create.deleteMs.p50Ms, 0)} ms | ${f(c.create.deleteMs.p95Ms, 0)} ms | ${f(c.create.deleteMs.p99Ms, 0)} ms | ${f(c.create.deleteMs.maxMs, 0)} ms | ${f(c.create.pairsPerS, 2)} create+delete/s |`,
    );
    for (const l of c.rest) {
      lines.push(
        `| REST | GET ${l.endpoint} (autocannon, ${l.connections} conn, ${l.durationS} s${l.endpoint.includes('pipelines') ? ', 8 pipelines' : ''}) | ${l.latencyMs.p50} ms | (p90 ${l.latencyMs.p90} ms) | ${l.latencyMs.p99} ms | ${l.latencyMs.max} ms | ${f(l.requestsPerS, 0)} req/s${l.errors + l.non2xx > 0 ? ` (${l.errors} errors, ${l.non2xx} non-2xx)` : ''} |`,
      );
    }
    for (const g of c.grpc) {
      lines.push(
        `| gRPC | ${g.call} (sequential, ${g.summary.count}) | ${f(g.summary.p50Ms, 2)} ms | ${f(g.summary.p95Ms, 2)} ms | ${f(g.summary.p99Ms, 2)} ms | ${f(g.summary.maxMs, 2)} ms | ${f(g.callsPerS, 0)} calls/s |`,
      );
    }
    lines.push('');
  }
  const sc = r.scale;
  if (sc !== null) {
    lines.push(
      '| N | round | real time | latency s median (max) | depth above reserve ms, max | pipeline CPU % median (max) | sum | RSS MiB median (max) | engine CPU % | engine RSS MiB | senders CPU % (per pipeline) | receivers CPU % | bench CPU % | all measured CPU, % of machine | RTP pkt/s min-max | RTP gaps | SRT lost | why not |',
      '|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    );
    for (const st of sc.steps) {
      lines.push(
        `| ${st.n} | ${st.round ?? 1} | ${st.realTime ? 'yes' : '**no**'} | ${f(st.latencyS.median, 3)} (${f(st.latencyS.max, 3)}) | ${f(1000 * st.depthS.max, 0)} | ${f(st.pipelineCpuPct.median)} (${f(st.pipelineCpuPct.max)}) | ${f(st.pipelineCpuPct.sum, 0)} | ` +
          `${f(st.pipelineRssMiB.median)} (${f(st.pipelineRssMiB.max)}) | ${f(st.engineCpuPct)} | ${f(st.engineRssMiB, 0)} | ` +
          `${f(st.senderCpuPct.sum, 2)} (${f(st.senderCpuPct.perSender, 2)}) | ${f(st.receiversCpuPct, 2)} | ${f(st.benchCpuPct, 2)} | ` +
          `${f(st.accountedPctOfMachine, 0)} | ${f(st.rtp.minRatePerS, 0)}-${f(st.rtp.maxRatePerS, 0)} | ${f(st.rtp.totalGaps, 0)} | ${f(st.srt.lost, 0)} | ${st.reasons.join('; ')} |`,
      );
    }
    lines.push(
      '',
      ...[...new Set(sc.steps.map((x) => x.n))].map((n) => `- scale N = ${n}: whole in ${wholeRounds(sc.steps, n)}`),
      ...costGrowth(sc.steps, [...new Set(sc.steps.map((x) => x.n))]).map((l) => `- scale: ${l}`),
      `- scale: largest N measured real time in every round: **${sc.largestRealTimeN}**${sc.stoppedEarly ? ' (sweep stopped at the first N that was not)' : ''}; ` +
        `window ${f(sc.steps[0]?.windowS ?? Number.NaN, 0)} s per N; rtp_packets_per_send ${sc.rtpPacketsPerSend ?? 'not set (engine default)'}`,
      `- scale sender (${sc.sender.kind}, ${sc.sender.processes}${sc.sender.kind === 'gst-shared' ? ', one `t. ! srtsink` branch per pipeline' : ''}): \`${sc.sender.command.join(' ')}\`; ` +
        `receivers: one \`${path.basename(sc.receiver.command[0] ?? 'rtp-counter')} N\` process (${sc.receiver.source}, SO_RCVBUF ${sc.receiver.rcvbufBytes} bytes, nice ${sc.receiver.nice}); ` +
        `bench CPU = this node process`,
    );
  }
  if (sc !== null && sc.reference !== null) lines.push('', referenceTable(sc, sc.reference));
  const ad = r.admission;
  if (ad !== null) {
    lines.push(
      '',
      `- admission (pipelines created one by one with audio flowing, one \`${ad.sender}\` sender each, until the engine refused): ` +
        `**${ad.accepted} accepted**${ad.largestRealTimeN === null ? '' : ` against a largest real-time N of **${ad.largestRealTimeN}** in the sweep ` +
          `(${ad.acceptedOfCapacity === null ? 'n/a' : `${f(100 * ad.acceptedOfCapacity, 0)} %`}; goal >= 90 % and never more)`}; ` +
        `over a ${f(ad.window.windowS, 0)} s window ${ad.window.realTime ? 'every accepted pipeline was real time' : `**not** every accepted pipeline was real time (${ad.window.reasons.join('; ')})`} ` +
        `(RTP ${f(ad.window.rtpMinRatePerS, 0)}-${f(ad.window.rtpMaxRatePerS, 0)}/s, per pipeline CPU median ${f(ad.window.pipelineCpuPctMedian)} %, headroom ratio ${f(ad.window.headroomRatio, 3)})`,
      `- admission refusal (3 in a row, 10 s apart; ${ad.refusalsRetried} earlier refusal(s) retried; every refusal by rule: ${describeRules(ad.refusalsByRule)}; headroom ratio ${f(ad.headroomAtStart, 3)} at the start): ` +
        `${ad.refusal ?? 'none (max_pipelines reached)'}; load average ${ad.loadBefore} before, ${ad.loadAfter} after`,
    );
  }
  lines.push(`- load average before ${r.loadBefore}, after ${r.loadAfter}`);
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// command line

export const ENGINE_USAGE =
  '[--only engine|scale] [--quick] [--sender gst-shared|gst|ffmpeg] [--scale 1,8,16,32,64] [--window S] [--settle S] [--sender-rate R] [--rounds N] [--control-priority P] [--packets-per-send K] [--admission] [--reference ffmpeg|floor|passthrough|no-bridge]';

/** Reads the engine bench flags; returns false for a flag that is not one of them. */
export function engineBenchFlag(a: string, value: () => string, into: EngineBenchOptions): boolean {
  if (a === '--quick') into.quick = true;
  else if (a === '--admission') into.admission = true;
  else if (a === '--sender') {
    const v = value();
    const kind = SENDER_KINDS.find((k) => k === v);
    if (kind === undefined) throw new Error(`--sender ${SENDER_KINDS.join('|')}, not ${v}`);
    into.sender = kind;
  } else if (a === '--reference') {
    const v = value();
    const kind = SCALE_REFERENCE_KINDS.find((k) => k === v);
    if (kind === undefined) throw new Error(`--reference ${SCALE_REFERENCE_KINDS.join('|')}, not ${v}`);
    into.reference = kind;
  } else if (a === '--scale') {
    const ns = value().split(',').map(Number);
    if (ns.some((n) => !Number.isInteger(n) || n < 1 || n > 1024)) throw new Error('--scale takes whole numbers 1-1024, comma separated');
    into.scaleNs = ns.sort((x, y) => x - y);
  } else if (a === '--window') {
    const w = Number(value());
    if (!(w >= 1 && w <= 500)) throw new Error('--window takes seconds, 1-500 (the programme is 600 s)');
    into.windowS = w;
  } else if (a === '--settle') {
    const w = Number(value());
    if (!(w >= 0 && w <= 120)) throw new Error('--settle takes seconds, 0-120');
    into.settleS = w;
  } else if (a === '--sender-rate') {
    const r = Number(value());
    if (!(r >= 0.99 && r <= 1.01)) throw new Error('--sender-rate takes a rate 0.99-1.01 (1.0005: a sender 500 ppm fast)');
    into.senderRate = r;
  } else if (a === '--control-priority') {
    const k = Number(value());
    if (!Number.isInteger(k) || k < 0 || k > 99) throw new Error('--control-priority takes 0-99 (the engine config key)');
    into.controlPriority = k;
  } else if (a === '--rounds') {
    const k = Number(value());
    if (!Number.isInteger(k) || k < 1 || k > 20) throw new Error('--rounds takes a whole number 1-20');
    into.scaleRounds = k;
  } else if (a === '--packets-per-send') {
    const k = Number(value());
    if (!Number.isInteger(k) || k < 1 || k > 16) throw new Error('--packets-per-send takes a whole number 1-16');
    into.packetsPerSend = k;
  } else return false;
  return true;
}

/** This script's command line: `--only engine|scale` and the engine bench flags. */
export function parseEngineBenchArgs(argv: readonly string[]): EngineBenchOptions {
  const opts: EngineBenchOptions = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--only') {
      const v = value();
      if (v !== 'engine' && v !== 'scale') throw new Error(`--only engine or --only scale, not ${v}`);
      opts.parts = { engine: v === 'engine', scale: v === 'scale' };
    } else if (!engineBenchFlag(a, value, opts)) throw new Error(`unknown argument ${a}\nusage: bench/engine.ts ${ENGINE_USAGE}`);
  }
  return opts;
}

runIfMain(import.meta.url, 'bench/engine', async () => {
  const r = await runEngineBench(parseEngineBenchArgs(process.argv.slice(2)));
  process.stdout.write(`\n${engineTable(r)}\n\n${JSON.stringify(r, null, 2)}\n`);
});

/** A metrics scrape and when the engine read it: the midpoint of the call, performance.now() ms. */
async function timedScrape(engine: { metrics(): Promise<MetricTable> }): Promise<{ table: MetricTable; atMs: number }> {
  const before = performance.now();
  const table = await engine.metrics();
  return { table, atMs: (before + performance.now()) / 2 };
}
