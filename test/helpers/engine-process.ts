/**
 * Runs the real engine (`node dist/audio-engine.mjs`, as `npm start` does) as a child process with its own config and
 * state folder, and cleans up after the test: the engine and every pipeline child it started,
 * even when the test fails.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { findLeftovers } from '../../src/process/reap.js';
import type { PipelineView } from '../../src/pipelines/registry.js';
import { baseConfigLines, enginePorts, launchEngine, type LogLine } from './engine-launcher.js';

export { MAIN, ROOT, type LogLine } from './engine-launcher.js';

export interface EngineProcess {
  url: string;
  restPort: number;
  dir: string;
  stateDir: string;
  configFile: string;
  process: ChildProcess;
  logs: LogLine[];
  stderr: string[];
  /** Resolves with [code, signal] when the engine exits. */
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  waitForLog(predicate: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
}

export interface EngineConfigOptions {
  extraToml?: string;
  /** Added to the engine's environment. */
  env?: Record<string, string>;
  restPort?: number;
  dir?: string;
  /** Run the engine inside this network namespace (`ip netns exec`; test/helpers/netns.ts). */
  netns?: string;
}

/**
 * Capacity settings of every test engine unless its `extraToml` sets them: the tests share a
 * 2-core machine whose other load would make admission refuse pipelines at random (a fixed
 * capacity of 64 cores), and their pipelines keep the engine's niceness. The admission tests
 * (test/e2e/admission.test.ts) set their own.
 */
const TEST_CAPACITY_DEFAULTS = ['cpu_cores = 64', 'normal_priority_nice = 0'];

/**
 * A fresh folder for one test engine, removed when the test ends, after the engine and its
 * children were killed: teardowns run last registered first, and startEngine registers the kill
 * after this. Not tap's `t.testdir()`: made before the test's first teardown, tap removes it
 * before the teardowns run, while the engine still writes there (pmc's own socket in the state
 * folder every `ptp_poll_ms`), which failed a test with ENOTEMPTY and left its engine running
 * until tap's timeout. A test that prepares an engine's folder itself passes `dir: engineDir(t)`
 * to startEngine; teardowns it registers later (an unmount) run before the removal.
 */
export function engineDir(t: Test): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'audio-engine-test-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }));
  return dir;
}

/** Writes a config file in `dir` (a fresh folder per engine unless given). */
export async function writeConfig(t: Test, options: EngineConfigOptions = {}): Promise<{ dir: string; file: string; restPort: number }> {
  const dir = options.dir ?? engineDir(t);
  mkdirSync(dir, { recursive: true });
  const ports = await enginePorts(options.restPort);
  const file = path.join(dir, 'config.toml');
  writeFileSync(
    file,
    [
      ...baseConfigLines(ports),
      ...TEST_CAPACITY_DEFAULTS.filter((line) => !(options.extraToml ?? '').includes(line.split(' ')[0] ?? '')),
      options.extraToml ?? '',
      // No SAP from a test engine unless the test asks for it inside its own network namespace
      // (test/e2e/aes67.test.ts): a multicast output must never be announced on the host's interfaces.
      ...((options.extraToml ?? '').includes('[aes67]') ? [] : ['[aes67]', 'sap = false']),
    ].join('\n'),
  );
  return { dir, file, restPort: ports.restPort };
}

/**
 * Starts the engine with a config file and waits until its stored pipelines have started
 * (`waitForReady: false`: returns at once, before the engine answers anything). The engine and
 * every pipeline child it started end with the test, even when it fails.
 */
export async function startEngine(t: Test, options: EngineConfigOptions & { configFile?: string; waitForReady?: boolean } = {}): Promise<EngineProcess> {
  const written = options.configFile === undefined ? await writeConfig(t, options) : undefined;
  const configFile = options.configFile ?? written?.file ?? '';
  const restPort = written?.restPort ?? options.restPort ?? 0;
  const launched = launchEngine({ configFile, env: options.env, netns: options.netns });
  const { child, exited, stateDir } = launched;
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    for (const pid of await findLeftovers(stateDir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  });
  const engine: EngineProcess = {
    url: `http://127.0.0.1:${restPort}`,
    restPort,
    dir: launched.dir,
    stateDir,
    configFile,
    process: child,
    logs: launched.logs,
    stderr: launched.stderr,
    exited,
    waitForLog: launched.waitForLog,
  };
  if (options.waitForReady !== false) await launched.ready();
  return engine;
}

export interface ApiResponse<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export async function api<T = unknown>(
  engine: { url: string },
  method: string,
  url: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<ApiResponse<T>> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === 'string' ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] ??= 'application/json';
  }
  const response = await fetch(`${engine.url}${url}`, init);
  const text = await response.text();
  let parsed: unknown = text;
  if ((response.headers.get('content-type') ?? '').includes('json') && text !== '') parsed = JSON.parse(text);
  return { status: response.status, headers: response.headers, body: parsed as T, text };
}

/** Polls until `check` returns a value (not undefined), or fails after the timeout. */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs: number, what: string): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** SRT latency of test pipelines and test senders, ms. */
export const TEST_SRT_LATENCY_MS = 300;

export interface PipelineRequest {
  name?: string;
  srtPort: number;
  processing?: unknown[];
  /** RTP destination port on 127.0.0.1 (9, discard, when nothing listens). */
  outPort?: number;
}

/** Creates a pipeline over REST (SRT in on `srtPort`, RTP out to 127.0.0.1) and returns it. */
export async function createPipeline(engine: { url: string }, request: PipelineRequest): Promise<PipelineView> {
  const res = await api<PipelineView>(engine, 'POST', '/api/v1/pipelines', {
    name: request.name ?? `pipeline on ${request.srtPort}`,
    // 300 ms of SRT latency: on a loaded 2-core test machine 120 ms lets late packets drop.
    input: { type: 'srt', port: request.srtPort, latency: TEST_SRT_LATENCY_MS },
    processing: request.processing ?? [],
    output: { type: 'rtp', host: '127.0.0.1', port: request.outPort ?? 9 },
  });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body;
}

/** Polls a pipeline until `test` holds, and returns it. */
export function waitForPipeline(
  engine: { url: string },
  id: string,
  test: (pipeline: PipelineView) => boolean,
  what: string,
  timeoutMs = 15_000,
): Promise<PipelineView> {
  return eventually(async () => {
    const res = await api<PipelineView>(engine, 'GET', `/api/v1/pipelines/${id}`);
    return res.status === 200 && test(res.body) ? res.body : undefined;
  }, timeoutMs, `${id}: ${what}`);
}

export const isRunning = (pipeline: PipelineView): boolean => pipeline.state === 'running';

/** Live gst-launch-1.0 processes of an engine, found by its instance mark (process/reap.ts). */
export async function gstLaunchChildren(stateDir: string): Promise<number[]> {
  const pids: number[] = [];
  for (const pid of await findLeftovers(stateDir)) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0');
      const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
      const zombie = / Z /.test(stat.slice(stat.lastIndexOf(')')));
      if (!zombie && argv.some((a) => a.endsWith('gst-launch-1.0'))) pids.push(pid);
    } catch {
      // gone
    }
  }
  return pids;
}

/** Waits until the engine's REST API answers (a loaded machine can take longer than the launcher's 20 s to start node). */
export async function engineAnswering(engine: EngineProcess, timeoutMs = 90_000): Promise<void> {
  await eventually(async () => {
    try {
      return (await api(engine, 'GET', '/api/v1/pipelines')).status === 200 ? true : undefined;
    } catch {
      return undefined;
    }
  }, timeoutMs, 'the engine to answer');
}
