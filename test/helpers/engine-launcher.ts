/**
 * The one way tests and benchmarks start the real engine (`node dist/audio-engine.mjs --config
 * FILE`, as `npm start` does): the config's common lines, the process, its JSON log lines and
 * stderr, a wait for a log line and for readiness. Cleaning up is the caller's: tests tie it to
 * `t.teardown` (engine-process.ts), the benchmarks to `BenchEngine.stop()` (bench/engine-harness.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { freeTcpPort } from './ports.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
/** What ships: the bundle that `npm run build` writes (scripts/bundle.mjs). */
export const MAIN = path.join(ROOT, 'dist', 'audio-engine.mjs');

export interface LogLine {
  level: number;
  msg: string;
  event?: string;
  pipeline_id?: string;
  [key: string]: unknown;
}

export interface EnginePorts {
  restPort: number;
  grpcPort: number;
  dashboardPort: number;
}

/** Free loopback ports for one engine; `restPort` when the caller has one already. */
export async function enginePorts(restPort?: number): Promise<EnginePorts> {
  return { restPort: restPort ?? (await freeTcpPort()), grpcPort: await freeTcpPort(), dashboardPort: await freeTcpPort() };
}

/**
 * The lines every test and bench config starts with: self-hosted, loopback, the given ports and a
 * `state` folder beside the config file. The `[engine]` table is open at the end: what follows
 * up to the next table goes into it.
 */
export function baseConfigLines(ports: EnginePorts): string[] {
  return [
    'mode = "self-hosted"',
    '[server]',
    'bind = "127.0.0.1"',
    `rest_port = ${ports.restPort}`,
    `grpc_port = ${ports.grpcPort}`,
    `dashboard_port = ${ports.dashboardPort}`,
    '[engine]',
    'state_dir = "state"',
  ];
}

export interface LaunchOptions {
  configFile: string;
  /** Added to the engine's environment. */
  env?: NodeJS.ProcessEnv;
  /** Run the engine inside this network namespace (`ip netns exec`; test/helpers/netns.ts). */
  netns?: string;
  /** Its own process group (the benchmarks end it group and all). */
  detached?: boolean;
}

export interface LaunchedEngine {
  child: ChildProcess;
  /** Folder of the config file: the engine's working directory. */
  dir: string;
  /** `<dir>/state`: where base configs put the records (and what marks the engine's children). */
  stateDir: string;
  logs: LogLine[];
  /** performance.now() when each log line arrived, by index in `logs`. */
  arrivedAt: number[];
  stderr: string[];
  /** performance.now() just before the spawn. */
  spawnedAt: number;
  /** Resolves with [code, signal] when the engine exits. */
  exited: Promise<[number | null, NodeJS.Signals | null]>;
  waitForLog: (predicate: (line: LogLine) => boolean, timeoutMs?: number) => Promise<LogLine>;
  /** Waits for the `restored` event (stored pipelines started); rejects when the engine exits first. */
  ready: (timeoutMs?: number) => Promise<void>;
}

export function launchEngine(options: LaunchOptions): LaunchedEngine {
  const dir = path.dirname(options.configFile);
  // setpriv (util-linux, Essential in Debian) execs the engine with a parent-death signal: a test
  // file that tap kills (its timeout) takes its engines, and so their children, with it
  const argv = ['setpriv', '--pdeathsig', 'TERM', process.execPath, MAIN, '--config', options.configFile];
  const [command, ...args] = options.netns === undefined ? argv : ['ip', 'netns', 'exec', options.netns, ...argv];
  const spawnedAt = performance.now();
  const child = spawn(command ?? process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: dir,
    env: { ...process.env, ...options.env },
    detached: options.detached === true,
  });
  const logs: LogLine[] = [];
  const arrivedAt: number[] = [];
  const stderr: string[] = [];
  const waiters = new Set<{ predicate: (l: LogLine) => boolean; resolve: (l: LogLine) => void }>();
  createInterface({ input: child.stdout }).on('line', (text) => {
    let line: LogLine;
    try {
      line = JSON.parse(text) as LogLine;
    } catch {
      return;
    }
    logs.push(line);
    arrivedAt.push(performance.now());
    for (const waiter of waiters) {
      if (waiter.predicate(line)) {
        waiters.delete(waiter);
        waiter.resolve(line);
      }
    }
  });
  createInterface({ input: child.stderr }).on('line', (text) => stderr.push(text));
  const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve([child.exitCode, child.signalCode]);
    else child.once('exit', (code, signal) => resolve([code, signal]));
  });
  const waitForLog = (predicate: (line: LogLine) => boolean, timeoutMs = 15_000): Promise<LogLine> => {
    const seen = logs.find(predicate);
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
        waiters.delete(waiter);
        reject(new Error(`engine log line not seen in ${timeoutMs} ms; stderr: ${stderr.slice(-20).join('\n')}`));
      }, timeoutMs);
      waiters.add(waiter);
    });
  };
  const ready = async (timeoutMs = 20_000): Promise<void> => {
    await Promise.race([
      waitForLog((l) => l.event === 'restored', timeoutMs),
      exited.then(([code]) => {
        throw new Error(`engine exited with ${String(code)} before it was ready: ${stderr.slice(-20).join('\n')}`);
      }),
    ]);
  };
  return { child, dir, stateDir: path.join(dir, 'state'), logs, arrivedAt, stderr, spawnedAt, exited, waitForLog, ready };
}
