/**
 * What the engine benchmarks (bench/engine.ts) run against: the real engine
 * (`node dist/audio-engine.mjs --config FILE`) in a temp folder with free loopback ports, its JSON log
 * lines, its Prometheus metrics, SRT senders (one process each), light RTP counters, and CPU
 * readings from /proc. Every process started here is ended by `stop()` / `stopAll()`, process
 * group and all, also when a bench fails.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket, type Socket } from 'node:dgram';
import { copyFile, mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { findLeftovers } from '../src/supervisor/reap.js';
import { freeTcpPort } from '../test/helpers/ports.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const ENGINE_MAIN = path.join(ROOT, 'dist', 'audio-engine.mjs');

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

export interface LogLine {
  level: number;
  msg: string;
  event?: string;
  pipeline_id?: string;
  [key: string]: unknown;
}

export interface BenchEngineOptions {
  /** folder of this engine: config.toml and state/ */
  dir: string;
  maxPipelines?: number;
  /** a warm GStreamer registry to copy into the state folder first (children then start warm) */
  registryFrom?: string;
  env?: NodeJS.ProcessEnv;
}

export class BenchEngine {
  readonly logs: LogLine[] = [];
  readonly stderr: string[] = [];
  private readonly waiters = new Set<{ predicate: (l: LogLine) => boolean; resolve: (l: LogLine) => void }>();
  /** performance.now() when each log line arrived, by index in `logs` */
  readonly arrivedAt: number[] = [];
  readonly exited: Promise<void>;

  private constructor(
    readonly child: ChildProcess,
    readonly dir: string,
    readonly stateDir: string,
    readonly restPort: number,
    readonly grpcPort: number,
    readonly spawnedAt: number,
  ) {
    createInterface({ input: child.stdout ?? process.stdin }).on('line', (text) => {
      let line: LogLine;
      try {
        line = JSON.parse(text) as LogLine;
      } catch {
        return;
      }
      this.logs.push(line);
      this.arrivedAt.push(performance.now());
      for (const waiter of this.waiters) {
        if (waiter.predicate(line)) {
          this.waiters.delete(waiter);
          waiter.resolve(line);
        }
      }
    });
    if (child.stderr !== null) createInterface({ input: child.stderr }).on('line', (text) => this.stderr.push(text));
    this.exited = exitedPromise(child);
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
    const restPort = await freeTcpPort();
    const grpcPort = await freeTcpPort();
    const dashboardPort = await freeTcpPort();
    const configFile = path.join(options.dir, 'config.toml');
    await writeFile(
      configFile,
      [
        'mode = "self-hosted"',
        '[server]',
        'bind = "127.0.0.1"',
        `rest_port = ${restPort}`,
        `grpc_port = ${grpcPort}`,
        `dashboard_port = ${dashboardPort}`,
        '[engine]',
        'state_dir = "state"',
        `max_pipelines = ${options.maxPipelines ?? 64}`,
        '',
      ].join('\n'),
    );
    const spawnedAt = performance.now();
    const child = spawn(process.execPath, [ENGINE_MAIN, '--config', configFile], {
      cwd: options.dir,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // own process group, so that stop() can end it whole
    });
    return new BenchEngine(child, options.dir, stateDir, restPort, grpcPort, spawnedAt);
  }

  /** The GStreamer registry the engine keeps in its state folder (after it is ready). */
  async registryFile(): Promise<string | undefined> {
    const entries = await readdir(this.stateDir).catch(() => []);
    const name = entries.find((e) => e.startsWith('gst-registry-') && e.endsWith('.bin'));
    return name === undefined ? undefined : path.join(this.stateDir, name);
  }

  waitForLog(predicate: (line: LogLine) => boolean, timeoutMs = 20_000): Promise<LogLine> {
    const seen = this.logs.find(predicate);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const waiter = {
        predicate,
        resolve: (l: LogLine) => {
          clearTimeout(timer);
          resolve(l);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        reject(new Error(`engine log line not seen in ${timeoutMs} ms; stderr: ${this.stderr.slice(-20).join('\n')}`));
      }, timeoutMs);
      this.waiters.add(waiter);
    });
  }

  /** Waits for the `restored` event (stored pipelines started), or fails when the engine exits. */
  async ready(timeoutMs = 20_000): Promise<void> {
    await Promise.race([
      this.waitForLog((l) => l.event === 'restored', timeoutMs),
      this.exited.then(() => {
        throw new Error(`engine exited before it was ready: ${this.stderr.slice(-20).join('\n')}`);
      }),
    ]);
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
// RTP and SRT

/**
 * Counts RTP packets and sequence gaps on a loopback UDP port, the way test/helpers/rtp-receiver.ts
 * does, without decoding the payload: at 1000 packets/s per pipeline and up to 64 pipelines the
 * test receiver's per-sample decoding would be the biggest CPU user of the machine.
 */
export class RtpCounter {
  packets = 0;
  gaps = 0;
  private lastSeq: number | undefined;

  private constructor(
    private readonly socket: Socket,
    readonly port: number,
  ) {
    socket.on('message', (packet: Buffer) => {
      if (packet.length < 12 || ((packet[0] ?? 0) >> 6) !== 2) return;
      const seq = packet.readUInt16BE(2);
      if (this.lastSeq !== undefined && seq !== ((this.lastSeq + 1) & 0xffff)) this.gaps += 1;
      this.lastSeq = seq;
      this.packets += 1;
    });
  }

  static async open(): Promise<RtpCounter> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, '127.0.0.1', () => resolve());
    });
    try {
      socket.setRecvBufferSize(4 * 1024 * 1024); // capped by net.core.rmem_max
    } catch {
      // the default buffer then
    }
    return new RtpCounter(socket, socket.address().port);
  }

  /** Starts a new window: counts from zero (the next packet's sequence is not a gap). */
  reset(): void {
    this.packets = 0;
    this.gaps = 0;
    this.lastSeq = undefined;
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      try {
        this.socket.close(() => resolve());
      } catch {
        resolve();
      }
    });
  }
}

export type SenderKind = 'gst' | 'ffmpeg';

/**
 * Makes (once, cached by name in `cacheDir`) the programme every sender plays: 60 s of stereo
 * 48 kHz AAC 256 kb/s in MPEG-TS, two tones plus white noise.
 */
export async function programmeTs(cacheDir: string): Promise<string> {
  await mkdir(cacheDir, { recursive: true });
  const file = path.join(cacheDir, 'engine-sender-v1-60s-aac.ts');
  try {
    await readFile(file).then((b) => {
      if (b.length < 1_000_000) throw new Error('short');
    });
    return file;
  } catch {
    // make it
  }
  const tmp = `${file}.${process.pid}.tmp`;
  const expr = "0.2*sin(2*PI*440*t)+0.05*(random(0)*2-1)|0.2*sin(2*PI*660*t)+0.05*(random(1)*2-1)";
  const child = spawn(
    'ffmpeg',
    ['-nostdin', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `aevalsrc=${expr}:s=48000:d=60`,
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

/** The argv of one sender of `file` to an SRT listener on 127.0.0.1:port (latency 300 ms). */
export function senderCommand(kind: SenderKind, file: string, port: number): string[] {
  if (kind === 'ffmpeg') {
    return ['ffmpeg', '-nostdin', '-hide_banner', '-loglevel', 'error', '-re', '-stream_loop', '-1', '-i', file, '-c', 'copy',
      '-f', 'mpegts', `srt://127.0.0.1:${port}?mode=caller&latency=300000`];
  }
  // plays the 60 s file once, paced by its PCR timestamps (srtsink sync=true)
  return ['gst-launch-1.0', '-q', 'filesrc', `location=${file}`, '!', 'tsparse', 'set-timestamps=true', '!',
    'srtsink', `uri=srt://127.0.0.1:${port}?mode=caller&latency=300`, 'sync=true'];
}

export class Sender {
  private constructor(readonly child: ChildProcess, readonly command: string[]) {}

  static start(kind: SenderKind, file: string, port: number): Sender {
    const command = senderCommand(kind, file, port);
    const [cmd, ...args] = command;
    const child = spawn(cmd ?? 'false', args, { stdio: 'ignore', detached: true });
    child.on('error', () => undefined);
    return new Sender(child, command);
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
