/**
 * What the engine benchmarks (bench/engine.ts) run against: the real engine
 * (`node dist/audio-engine.mjs --config FILE`) in a temp folder with free loopback ports, its JSON log
 * lines, its Prometheus metrics, SRT senders (one gst-launch-1.0 for all pipelines by default), the
 * RTP counter (bench/rtp-counter.c, one process for all receivers), and CPU readings from /proc.
 * Every process started here is ended by `stop()` / `stopAll()`, process group and all, also when
 * a bench fails.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFile, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { findLeftovers } from '../src/process/reap.js';
import { baseConfigLines, enginePorts, launchEngine, type LaunchedEngine, type LogLine } from '../test/helpers/engine-launcher.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Nearest-rank percentile (p in 0..100) of the values; NaN for none. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const rank = Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length)));
  return s[rank - 1] ?? Number.NaN;
}

export interface LatencySummary {
  count: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
  meanMs: number;
}

export function summarize(valuesMs: number[]): LatencySummary {
  const mean = valuesMs.length === 0 ? Number.NaN : valuesMs.reduce((a, b) => a + b, 0) / valuesMs.length;
  return {
    count: valuesMs.length,
    p50Ms: percentile(valuesMs, 50),
    p95Ms: percentile(valuesMs, 95),
    p99Ms: percentile(valuesMs, 99),
    maxMs: valuesMs.length === 0 ? Number.NaN : Math.max(...valuesMs),
    meanMs: mean,
  };
}

/** Sends SIGKILL to a process group (or the process when it has none); ignores "gone". */
export function killGroup(pid: number | undefined, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // gone
    }
  }
}

function exitedPromise(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

// ---------------------------------------------------------------------------------------------
// /proc readings

const CLK_TCK = 100;

/** user + system CPU seconds of a process so far (0 when it is gone). */
export async function procCpuSeconds(pid: number | undefined): Promise<number> {
  if (pid === undefined) return 0;
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state): utime is field 14, stime field 15
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return 0;
  }
}

export async function loadAverage(): Promise<string> {
  return (await readFile('/proc/loadavg', 'utf8')).split(' ').slice(0, 3).join(' ');
}

// ---------------------------------------------------------------------------------------------
// Prometheus text

/** One sample of the metrics text: name, labels, value. */
export interface MetricSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseMetrics(text: string): MetricSample[] {
  const out: MetricSample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (m === null) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      if (l[1] !== undefined) labels[l[1]] = l[2] ?? '';
    }
    out.push({ name: m[1] ?? '', labels, value: Number(m[3]) });
  }
  return out;
}

/** name -> pipeline_id -> value, for the per-pipeline series; '' for series without one. */
export type MetricTable = Map<string, Map<string, number>>;

export function metricTable(samples: MetricSample[]): MetricTable {
  const table: MetricTable = new Map();
  for (const s of samples) {
    let byId = table.get(s.name);
    if (byId === undefined) {
      byId = new Map();
      table.set(s.name, byId);
    }
    byId.set(s.labels.pipeline_id ?? '', (byId.get(s.labels.pipeline_id ?? '') ?? 0) + s.value);
  }
  return table;
}

// ---------------------------------------------------------------------------------------------
// The engine

export type { LogLine } from '../test/helpers/engine-launcher.js';

export interface BenchEngineOptions {
  /** folder of this engine: config.toml and state/ */
  dir: string;
  maxPipelines?: number;
  /** a warm GStreamer registry to copy into the state folder first (children then start warm) */
  registryFrom?: string;
  /** `rtp_packets_per_send` under [engine] (RTP packets the sink sends per wake-up); not written when unset */
  rtpPacketsPerSend?: number;
  /**
   * Admission control as configured by default (true: the admission bench), or off (default: the
   * control-plane bench and the plain scale sweep, which measures what the host can carry;
   * `cpu_cores = 1024`, `cpu_reserve_percent = 0`).
   */
  admission?: boolean;
  /** more config lines after the [engine] table (other tables: `[dashboard]`, ...) */
  extraToml?: string[];
  env?: NodeJS.ProcessEnv;
}

/** The real engine of a benchmark: launched by test/helpers/engine-launcher.ts in its own process group. */
export class BenchEngine {
  readonly logs: LogLine[];
  readonly stderr: string[];
  /** performance.now() when each log line arrived, by index in `logs` */
  readonly arrivedAt: number[];
  readonly exited: Promise<void>;
  readonly child: ChildProcess;
  readonly dir: string;
  readonly stateDir: string;
  readonly spawnedAt: number;

  private constructor(
    private readonly launched: LaunchedEngine,
    readonly restPort: number,
    readonly grpcPort: number,
    readonly dashboardPort: number,
  ) {
    this.child = launched.child;
    this.dir = launched.dir;
    this.stateDir = launched.stateDir;
    this.spawnedAt = launched.spawnedAt;
    this.logs = launched.logs;
    this.stderr = launched.stderr;
    this.arrivedAt = launched.arrivedAt;
    this.exited = launched.exited.then(() => undefined);
  }

  get url(): string {
    return `http://127.0.0.1:${this.restPort}`;
  }

  /** Writes a config with free loopback ports and spawns the engine (does not wait). */
  static async spawn(options: BenchEngineOptions): Promise<BenchEngine> {
    const stateDir = path.join(options.dir, 'state');
    await mkdir(stateDir, { recursive: true });
    if (options.registryFrom !== undefined) {
      await copyFile(options.registryFrom, path.join(stateDir, path.basename(options.registryFrom))).catch(() => undefined);
    }
    const ports = await enginePorts();
    const configFile = path.join(options.dir, 'config.toml');
    await writeFile(
      configFile,
      [
        ...baseConfigLines(ports),
        `max_pipelines = ${options.maxPipelines ?? 64}`,
        ...(options.rtpPacketsPerSend === undefined ? [] : [`rtp_packets_per_send = ${options.rtpPacketsPerSend}`]),
        ...(options.admission === true ? [] : ['cpu_cores = 1024', 'cpu_reserve_percent = 0']),
        // The bench measures capacity, not priorities: every child at the engine's niceness, as before.
        'normal_priority_nice = 0',
        ...(options.extraToml ?? []),
        '',
      ].join('\n'),
    );
    const launched = launchEngine({ configFile, env: options.env, detached: true }); // own group: stop() ends it whole
    return new BenchEngine(launched, ports.restPort, ports.grpcPort, ports.dashboardPort);
  }

  /** The GStreamer registry the engine keeps in its state folder (after it is ready). */
  async registryFile(): Promise<string | undefined> {
    const entries = await readdir(this.stateDir).catch(() => []);
    const name = entries.find((e) => e.startsWith('gst-registry-') && e.endsWith('.bin'));
    return name === undefined ? undefined : path.join(this.stateDir, name);
  }

  waitForLog(predicate: (line: LogLine) => boolean, timeoutMs = 20_000): Promise<LogLine> {
    return this.launched.waitForLog(predicate, timeoutMs);
  }

  /** Waits for the `restored` event (stored pipelines started), or fails when the engine exits. */
  ready(timeoutMs = 20_000): Promise<void> {
    return this.launched.ready(timeoutMs);
  }

  async request(method: string, url: string, body?: unknown): Promise<{ status: number; text: string }> {
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { 'content-type': 'application/json' };
    }
    const res = await fetch(`${this.url}${url}`, init);
    return { status: res.status, text: await res.text() };
  }

  async metrics(): Promise<MetricTable> {
    const res = await this.request('GET', '/api/v1/metrics');
    if (res.status !== 200) throw new Error(`metrics: ${res.status} ${res.text}`);
    return metricTable(parseMetrics(res.text));
  }

  /**
   * SIGTERM (the engine stops its children), then after `graceMs` SIGKILL to the engine's group
   * and to every pipeline child still marked with this state folder (each in its own group).
   */
  async stop(graceMs = 15_000): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      killGroup(this.child.pid, 'SIGTERM');
      await Promise.race([this.exited, sleep(graceMs)]);
    }
    killGroup(this.child.pid, 'SIGKILL');
    await Promise.race([this.exited, sleep(2000)]);
    for (const pid of await findLeftovers(this.stateDir)) killGroup(pid, 'SIGKILL');
  }
}

// ---------------------------------------------------------------------------------------------
// the benchmarked pipelines' job

/** The processing of every benchmarked pipeline. */
export const BENCH_PROCESSING = [
  { plugin: 'loudness-normalize', target: -23 },
  { plugin: 'eq', bands: [{ freq: 100, gain: 4 }, { freq: 1000, gain: -3, q: 2.5 }, { freq: 8000, gain: 2 }] },
];

// ---------------------------------------------------------------------------------------------
// RTP and SRT

export const RTP_COUNTER_SOURCE = path.join(ROOT, 'bench', 'rtp-counter.c');

/**
 * Compiles bench/rtp-counter.c to `<cacheDir>/rtp-counter` (`cc -O2 -Wall -Werror`) when the
 * binary is missing or older than the source; returns the binary.
 */
export function rtpCounterBinary(cacheDir: string): Promise<string> {
  return benchBinary(RTP_COUNTER_SOURCE, cacheDir);
}

/**
 * Compiles one of the bench's C programs (`bench/NAME.c`) to `<cacheDir>/NAME` with the system
 * `cc -O2 -Wall -Werror` when the binary is missing or older than the source; returns the binary.
 * The compiler writes a temp file that is then renamed, so that a bench running at the same time
 * never runs half a binary.
 */
export async function benchBinary(source: string, cacheDir: string): Promise<string> {
  await mkdir(cacheDir, { recursive: true });
  const binary = path.join(cacheDir, path.basename(source, '.c'));
  const [src, bin] = await Promise.all([stat(source), stat(binary).catch(() => undefined)]);
  if (bin !== undefined && bin.mtimeMs >= src.mtimeMs) return binary;
  const tmp = `${binary}.${process.pid}.tmp`;
  const child = spawn('cc', ['-O2', '-Wall', '-Werror', '-o', tmp, source], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', (e) => reject(new Error(`cannot run cc to build ${source} (scripts/setup.sh installs gcc): ${e.message}`)));
    child.once('exit', (c) => resolve(c));
  });
  if (code !== 0) {
    await rm(tmp, { force: true });
    throw new Error(`cc could not build ${source} (${String(code)}): ${err.trim()}`);
  }
  await rename(tmp, binary);
  return binary;
}

/** Packets and sequence gaps of one receiver since the last reset. */
export interface RtpCount {
  port: number;
  packets: number;
  gaps: number;
  /** datagrams the kernel dropped on the counter's full socket buffer (the counter's fault) */
  drops: number;
  /**
   * Inserted silence in the L24 payloads: frames in runs of at least 8 all-zero frames, the runs,
   * and the longest (frames). The programme is never silent, so any run is the engine's.
   */
  silent_frames: number;
  silences: number;
  longest_silence: number;
  /** frames with a sample that is not 0: the programme has reached the receiver (a bridge sends silence until it does) */
  audio_frames: number;
}

export interface RtpSnapshot {
  /** seconds since the last reset, on the counter's clock */
  windowS: number;
  sockets: RtpCount[];
}

/**
 * The counter stopped answering its commands: on a host saturated past the real-time limit it
 * is starved (the step that did this is not real time, and its window cannot be measured).
 */
export class CounterUnanswered extends Error {}

/**
 * The RTP receivers: one bench/rtp-counter process with N UDP sockets on 127.0.0.1, counting
 * packets and sequence gaps as test/helpers/rtp-receiver.ts does, without decoding the payload
 * (at 1000 packets/s per pipeline, Node handling every datagram cost ~2 % of a core per
 * pipeline). Talks a line protocol over the child's stdin/stdout; the child exits when its stdin
 * closes, so it never outlives the bench.
 */
export class RtpCounters {
  private readonly replies: string[] = [];
  private readonly waiting: ((line: string | undefined) => void)[] = [];
  private queue: Promise<unknown> = Promise.resolve();
  /** why it cannot answer any more (exited, or an answer came too late to be matched) */
  private broken: string | undefined;
  /** it stopped answering (alive, or not yet seen to end): a saturated host starves it */
  private unanswered = false;
  readonly exited: Promise<void>;
  readonly stderr: string[] = [];
  /** ports the counter bound, in order (one per receiver) */
  ports: number[] = [];
  /** SO_RCVBUF of its sockets as the kernel reports it */
  rcvbufBytes = 0;
  /** its nice value (it asks for -10) */
  nice = 0;

  private constructor(
    readonly child: ChildProcess,
    lines: Interface,
    private readonly answerTimeoutMs: number,
  ) {
    lines.on('line', (line) => {
      const w = this.waiting.shift();
      if (w !== undefined) w(line);
      else this.replies.push(line);
    });
    lines.on('close', () => {
      this.broken ??= 'rtp-counter exited';
      for (const w of this.waiting.splice(0)) w(undefined);
    });
    if (child.stderr !== null) createInterface({ input: child.stderr }).on('line', (t) => this.stderr.push(t));
    this.exited = exitedPromise(child);
  }

  /**
   * Starts `binary N` and reads the ports it bound. `answerTimeoutMs`: how long a command waits
   * for its answer before the counter counts as starved (CounterUnanswered); generous, since with
   * the cores saturated (past the real-time limit) answers can take seconds.
   */
  static async start(binary: string, n: number, answerTimeoutMs = 30_000): Promise<RtpCounters> {
    const child = spawn(binary, [String(n)], { stdio: ['pipe', 'pipe', 'pipe'] });
    child.on('error', () => undefined);
    child.stdin?.on('error', () => undefined);
    if (child.stdout === null) throw new Error('rtp-counter: no stdout');
    const counters = new RtpCounters(child, createInterface({ input: child.stdout }), answerTimeoutMs);
    try {
      const hello = JSON.parse(await counters.nextLine(10_000)) as { ports: number[]; rcvbuf: number; nice: number };
      if (!Array.isArray(hello.ports) || hello.ports.length !== n) throw new Error(`rtp-counter bound ${String(hello.ports?.length)} ports, not ${n}`);
      counters.ports = hello.ports;
      counters.rcvbufBytes = hello.rcvbuf;
      counters.nice = hello.nice;
    } catch (e) {
      await counters.stop();
      throw e;
    }
    return counters;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  private nextLine(timeoutMs: number): Promise<string> {
    const failed = (): Error => {
      const message = `${this.broken ?? 'rtp-counter'}: ${this.stderr.join('\n')}`;
      return this.unanswered ? new CounterUnanswered(message) : new Error(message);
    };
    if (this.broken !== undefined) return Promise.reject(failed());
    const ready = this.replies.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      const w = (line: string | undefined): void => {
        clearTimeout(timer);
        if (line === undefined) reject(failed());
        else resolve(line);
      };
      const timer = setTimeout(() => {
        const i = this.waiting.indexOf(w);
        if (i >= 0) this.waiting.splice(i, 1);
        this.broken = `rtp-counter did not answer in ${timeoutMs} ms`;
        this.unanswered = true;
        reject(failed());
      }, timeoutMs);
      this.waiting.push(w);
    });
  }

  /** One command, one answer line; commands run one after the other. */
  private ask(command: string): Promise<string> {
    const answer = this.queue.then(async () => {
      this.child.stdin?.write(`${command}\n`);
      return this.nextLine(this.answerTimeoutMs);
    });
    this.queue = answer.catch(() => undefined);
    return answer;
  }

  /** Starts a new window: counts from zero (the next packet's sequence is not a gap). */
  async reset(): Promise<void> {
    const answer = await this.ask('reset');
    if (answer !== 'ok') throw new Error(`rtp-counter reset: ${answer}`);
  }

  async snapshot(): Promise<RtpSnapshot> {
    const answer = await this.ask('snapshot');
    const s = JSON.parse(answer) as { window_s: number; sockets: RtpCount[] };
    return { windowS: s.window_s, sockets: s.sockets };
  }

  /** Closes its stdin (it exits), then SIGTERM and SIGKILL if it has not. */
  async stop(): Promise<void> {
    this.child.stdin?.end();
    await Promise.race([this.exited, sleep(1000)]);
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGTERM');
      await Promise.race([this.exited, sleep(1000)]);
    }
    if (this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGKILL');
      await Promise.race([this.exited, sleep(2000)]);
    }
  }
}

/**
 * How the pipelines are fed: `gst-shared` one gst-launch-1.0 for all of them (the programme read
 * once, a tee, one srtsink per pipeline), `gst` one gst-launch-1.0 per pipeline, `ffmpeg` one
 * looping ffmpeg per pipeline.
 */
export type SenderKind = 'gst-shared' | 'gst' | 'ffmpeg';
export const SENDER_KINDS: readonly SenderKind[] = ['gst-shared', 'gst', 'ffmpeg'];

/**
 * Makes (once, cached by name in `cacheDir`) the programme every sender plays: 600 s of stereo
 * 48 kHz AAC 256 kb/s in MPEG-TS, pink noise (ffmpeg's anoisesrc, a fixed seed): never silent, so
 * any run of zero samples in the RTP that comes out is silence the engine inserted.
 */
/**
 * Length of the sender programme, s. A sender plays it once: start-up, the wait until every
 * pipeline flows and the window must fit in it (at N = 56 the old 60 s ran out before the window
 * ended, and every child restarted when its caller left).
 */
export const PROGRAMME_S = 600;

export async function programmeTs(cacheDir: string): Promise<string> {
  await mkdir(cacheDir, { recursive: true });
  const file = path.join(cacheDir, 'engine-sender-v3-pink-600s-aac.ts');
  try {
    await readFile(file).then((b) => {
      if (b.length < 1_000_000) throw new Error('short');
    });
    return file;
  } catch {
    // make it
  }
  const tmp = `${file}.${process.pid}.tmp`;
  const child = spawn(
    'ffmpeg',
    ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `anoisesrc=color=pink:amplitude=0.25:sample_rate=48000:seed=7:duration=${PROGRAMME_S}`, '-ac', '2',
      '-c:a', 'aac', '-b:a', '256k', '-f', 'mpegts', tmp],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let err = '';
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (c) => resolve(c));
  });
  if (code !== 0) throw new Error(`ffmpeg could not make the sender programme (${String(code)}): ${err.trim()}`);
  await rename(tmp, file);
  return file;
}

/**
 * The programme's TS packets, 7 to a buffer (1316 bytes: one SRT payload), each stamped from the
 * PCRs. Without `alignment=7` tsparse hands on what it read between two timestamps as one buffer of
 * about 19 kB, stamped once: the srtsinks sent 0.51 s of audio at once every 0.51 s, a burst no
 * real sender makes (ffmpeg -re and hardware encoders send each 1316-byte packet when it is
 * full, about 30 a second here); every pipeline then had to hold half a second against it, and a
 * burst late by more than its reserve was inserted silence in every pipeline at once.
 */
function tsparse(): string[] {
  return ['tsparse', 'set-timestamps=true', 'alignment=7'];
}

function srtsink(port: number): string[] {
  return ['srtsink', `uri=srt://127.0.0.1:${port}?mode=caller&latency=300`, 'sync=true'];
}

/**
 * The argv of one sender process of `file` to the SRT listeners on 127.0.0.1:ports (latency
 * 300 ms): every port for `gst-shared`, exactly one for the others. `localPort` (gst-shared): the
 * UDP port on 127.0.0.1 that every caller binds. `rate` (ffmpeg only): how fast it reads against
 * the host clock, `-readrate` (1.0005: a sender 500 ppm fast); 1 is `-re`.
 */
export function senderCommand(kind: SenderKind, file: string, ports: number[], localPort = 0, rate = 1): string[] {
  const [first] = ports;
  if (first === undefined || (kind !== 'gst-shared' && ports.length !== 1)) throw new Error(`a ${kind} sender takes one port`);
  if (rate !== 1 && kind !== 'ffmpeg') throw new Error(`a ${kind} sender reads at the host's rate only (a rate of ${rate} needs the ffmpeg sender)`);
  switch (kind) {
    case 'ffmpeg':
      return ['ffmpeg', '-nostdin', '-hide_banner', '-loglevel', 'error', ...(rate === 1 ? ['-re'] : ['-readrate', String(rate)]), '-stream_loop', '-1', '-i', file, '-c', 'copy',
        '-f', 'mpegts', `srt://127.0.0.1:${first}?mode=caller&latency=300000`];
    case 'gst':
      // plays the file once, paced by its PCR timestamps (srtsink sync=true)
      return ['gst-launch-1.0', '-q', 'filesrc', `location=${file}`, '!', ...tsparse(), '!', ...srtsink(first)];
    case 'gst-shared':
      // the same, read and parsed once, then a tee with one srtsink per pipeline, all in the one
      // streaming thread: the first sink waits for the clock, the others then send at once. No
      // queue per branch: with 16 branches the queues cost as much or a little more (2.6 % of a
      // core against 2.5 %, bench/README.md). async=false because without queues the first sink
      // to preroll would block the tee, so the others could never preroll.
      // Every caller binds the same local port: libsrt then runs all of them over one UDP socket
      // and one pair of send/receive threads (its multiplexer) instead of a socket and two
      // threads per caller, each thread woken every 10 ms. At N = 32: 6 threads instead of 68,
      // 1.9 % of a core instead of 5.3 % (bench/README.md).
      return ['gst-launch-1.0', '-q', 'filesrc', `location=${file}`, '!', ...tsparse(), '!', 'tee', 'name=t',
        ...ports.flatMap((p) => ['t.', '!', ...srtsink(p), 'async=false', ...(localPort > 0 ? ['localaddress=127.0.0.1', `localport=${localPort}`] : [])])];
  }
}

/**
 * The SCHED_FIFO priority every sender runs at, above the children's threads (the clock bridge's
 * input thread asks 5, its output thread 10). A sender stands for an encoder on a machine of its
 * own; here it shares 2 cores with the pipelines it feeds, whose real-time threads preempt it, and
 * SRT stamps a packet when it is sent, so a sender held up reaches its pipeline as late audio
 * whatever the SRT latency. Measured (tcpdump of the senders' packets on lo, each PES's capture
 * time against its PTS): the shared sender at N = 16, 94 s, paused 114-181 ms four times, and
 * every pipeline inserted the same silence; 32 separate ffmpeg senders (80 % of the machine,
 * 60 s) sent late together, by 30-200 ms at five instants, and 13 pipelines underran
 * (`input-late`) at those instants.
 */
export const SENDER_RT_PRIORITY = 20;

let chrtWorks: boolean | undefined;

/** `chrt -f PRIORITY` may be used here (root, CAP_SYS_NICE or an RLIMIT_RTPRIO that allows it). */
export function senderRealtime(): boolean {
  chrtWorks ??= spawnSync('chrt', ['-f', String(SENDER_RT_PRIORITY), 'true'], { stdio: 'ignore' }).status === 0;
  return chrtWorks;
}

/** The argv that starts a sender's `command`: under `chrt -f` where the host allows it. */
export function senderLaunch(command: string[]): string[] {
  return senderRealtime() ? ['chrt', '-f', String(SENDER_RT_PRIORITY), ...command] : command;
}

/** One sender process (for `gst-shared`, the one feeding every pipeline). */
export class Sender {
  /** the end of what the sender wrote on stderr (why it ended, when it did) */
  private stderrTail = '';

  private constructor(readonly child: ChildProcess, readonly command: string[], readonly ports: number[]) {
    child.stderr?.on('data', (d: Buffer) => {
      this.stderrTail = (this.stderrTail + d.toString()).slice(-400);
    });
  }

  /** The last line the sender wrote on stderr ('' for none). */
  get lastError(): string {
    return this.stderrTail.trim().split('\n').at(-1) ?? '';
  }

  static start(kind: SenderKind, file: string, ports: number[], localPort = 0, rate = 1): Sender {
    const command = senderLaunch(senderCommand(kind, file, ports, localPort, rate));
    const [cmd, ...args] = command;
    const child = spawn(cmd ?? 'false', args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    child.on('error', () => undefined);
    return new Sender(child, command, ports);
  }

  /**
   * The senders of `kind` for SRT listeners on `ports`: one process, or one per port.
   * `localPort`: the one local port of a gst-shared sender's callers (0: one each); `rate`: as
   * for senderCommand.
   */
  static startAll(kind: SenderKind, file: string, ports: number[], localPort = 0, rate = 1): Sender[] {
    if (kind === 'gst-shared') return [Sender.start(kind, file, ports, localPort, rate)];
    return ports.map((p) => Sender.start(kind, file, [p], 0, rate));
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async stop(): Promise<void> {
    killGroup(this.child.pid, 'SIGKILL');
    await Promise.race([exitedPromise(this.child), sleep(2000)]);
  }
}

export async function stopAll(items: { stop(): Promise<void> }[]): Promise<void> {
  await Promise.all(items.map((i) => i.stop().catch(() => undefined)));
}
