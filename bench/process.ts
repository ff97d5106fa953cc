/**
 * What the DSP benchmarks (bench/dsp-eq.ts, bench/dsp-loudnorm.ts, bench/run.ts) share: running
 * a child, timing its CPU with GNU time, the options and checks every bench has, the command
 * line flags they take, and running a script's main when it is the one node was started with.
 */
import { spawn } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { access, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** GNU time (Debian package `time`): user and system CPU of a child, 10 ms resolution. */
export const GNU_TIME = '/usr/bin/time';

export function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return Number.NaN;
  const mid = Math.floor(n / 2);
  const hi = s[mid] ?? Number.NaN;
  const lo = s[mid - 1] ?? hi;
  return n % 2 === 1 ? hi : (lo + hi) / 2;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/** Runs a command to its end; stdout is dropped, the first 64 KiB of stderr kept. */
export function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d: string) => {
      if (stderr.length < 64 * 1024) stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stderr }));
  });
}

/** "(1)", "(SIGKILL)" or "(?)": how a child ended, for error messages. */
export function exitReason(r: Exit): string {
  return `(${r.code ?? r.signal ?? '?'})`;
}

export async function exists(p: string): Promise<boolean> {
  try {
    await access(p, fsConstants.F_OK);
    return true;
  } catch {
    return false;
  }
}

/** The CPU and wall time of one run of a child process, seconds. */
export interface CpuRun {
  userS: number;
  sysS: number;
  cpuS: number;
  wallS: number;
}

/**
 * Runs `command` under `/usr/bin/time -f "%U %S %e"` (its report goes to workDir/time.txt) and
 * returns user, system, user+sys and wall seconds. Throws, naming `label` (default: the command),
 * when the command fails.
 */
export async function timeCommand(
  command: string[],
  env: NodeJS.ProcessEnv,
  workDir: string,
  label = command.join(' '),
): Promise<CpuRun> {
  const out = path.join(workDir, 'time.txt');
  await rm(out, { force: true });
  const r = await run(GNU_TIME, ['-f', '%U %S %e', '-o', out, ...command], env);
  if (r.code !== 0) throw new Error(`${label} failed ${exitReason(r)}: ${r.stderr.trim()}`);
  const text = (await readFile(out, 'utf8')).trim().split('\n').pop() ?? '';
  const [u, s, e] = text.split(/\s+/).map(Number);
  if (u === undefined || s === undefined || e === undefined || [u, s, e].some(Number.isNaN)) {
    throw new Error(`cannot read GNU time output: ${text}`);
  }
  return { userS: u, sysS: s, cpuS: u + s, wallS: e };
}

/** The runs of one case and their medians. */
export function cpuSummary(runs: CpuRun[]): { runs: CpuRun[]; medianCpuS: number; medianWallS: number } {
  return {
    runs,
    medianCpuS: median(runs.map((r) => r.cpuS)),
    medianWallS: median(runs.map((r) => r.wallS)),
  };
}

/** gst-plugins/build of this checkout. */
export function defaultPluginPath(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return path.resolve(here, '..', 'gst-plugins', 'build');
}

/** The options every bench takes. */
export interface BenchOptions {
  /** timed runs of each case (default 5) */
  runs?: number;
  /** where the programme file is cached (default <tmpdir>/audioengine-bench) */
  cacheDir?: string;
  /** directory holding libgstaudioengine.so (default $GST_PLUGIN_PATH or gst-plugins/build) */
  pluginPath?: string;
  /** programme length in seconds (default 600) */
  durationS?: number;
  /** progress lines (default: stderr) */
  log?: (line: string) => void;
}

export const DEFAULT_RUNS = 5;
export const DEFAULT_DURATION_S = 600;

export interface BenchSettings {
  runs: number;
  durationS: number;
  cacheDir: string;
  log: (line: string) => void;
  pluginPath: string;
}

/** The options with their defaults filled in; throws when runs is not a whole number >= 1. */
export function benchSettings(opts: BenchOptions): BenchSettings {
  const runs = opts.runs ?? DEFAULT_RUNS;
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`runs must be >= 1, got ${runs}`);
  return {
    runs,
    durationS: opts.durationS ?? DEFAULT_DURATION_S,
    cacheDir: opts.cacheDir ?? path.join(tmpdir(), 'audioengine-bench'),
    log: opts.log ?? ((l: string) => process.stderr.write(`${l}\n`)),
    pluginPath: opts.pluginPath ?? process.env.GST_PLUGIN_PATH ?? defaultPluginPath(),
  };
}

/** Throws, saying what to do, when GNU time or libgstaudioengine.so (in pluginPath) is missing. */
export async function checkBenchTools(pluginPath: string): Promise<void> {
  if (!(await exists(GNU_TIME))) throw new Error(`${GNU_TIME} not found: apt-get install time`);
  const found = await Promise.all(pluginPath.split(path.delimiter).map((d) => exists(path.join(d, 'libgstaudioengine.so'))));
  if (!found.some(Boolean)) {
    throw new Error(
      `libgstaudioengine.so not in ${pluginPath}: build gst-plugins (meson setup gst-plugins/build ` +
        'gst-plugins && ninja -C gst-plugins/build) or pass --plugin-path',
    );
  }
}

/** The environment of the GStreamer runs: our plugin, and a registry of their own in workDir. */
export function gstBenchEnv(pluginPath: string, workDir: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    GST_PLUGIN_PATH: pluginPath,
    // a registry of our own: the scan happens in the warm-up round, not in a timed run
    GST_REGISTRY: path.join(workDir, 'registry.bin'),
    GST_DEBUG: '*:1',
  };
}

/** The command line flags of BenchOptions. */
export type BenchArgs = Pick<BenchOptions, 'runs' | 'cacheDir' | 'pluginPath' | 'durationS'>;

export interface BenchArgsSpec {
  /** appended to the "needs a value" error (default: nothing) */
  valueHint?: string;
  /** the error for an argument no one takes */
  unknown: (arg: string) => string;
  /** reads the value of --runs (default: Number) */
  runs?: (value: string) => number;
  /** takes a flag of the caller's own; returns false when `arg` is not one */
  extra?: (arg: string, value: () => string) => boolean;
}

/** Parses --runs N, --cache-dir DIR, --plugin-path DIR, --duration S and the caller's extra flags. */
export function parseBenchArgs(argv: string[], spec: BenchArgsSpec): BenchArgs {
  const opts: BenchArgs = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value${spec.valueHint ?? ''}`);
      return v;
    };
    if (a === '--runs') opts.runs = (spec.runs ?? Number)(value());
    else if (a === '--cache-dir') opts.cacheDir = value();
    else if (a === '--plugin-path') opts.pluginPath = value();
    else if (a === '--duration') opts.durationS = Number(value());
    else if (spec.extra?.(a, value) !== true) throw new Error(spec.unknown(a));
  }
  return opts;
}

/** The flags of a single bench script (bench/dsp-eq.ts, bench/dsp-loudnorm.ts). */
export function parseScriptArgs(argv: string[]): BenchArgs {
  return parseBenchArgs(argv, {
    unknown: (a) => `unknown argument ${a} (--runs N, --cache-dir DIR, --plugin-path DIR, --duration S)`,
  });
}

/** A bench script's own flags, `--name value`. */
export interface ScriptFlags {
  text: (name: string) => string | undefined;
  num: (name: string) => number | undefined;
}

/** The flags of a script that takes `--name value` pairs; undefined once `usage` is printed for --help or -h. */
export function scriptFlags(usage: string, argv: string[] = process.argv.slice(2)): ScriptFlags | undefined {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage);
    return undefined;
  }
  const text = (name: string): string | undefined => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  return { text, num: (name) => (text(name) === undefined ? undefined : Number(text(name))) };
}

/**
 * Runs `main` when the module at `moduleUrl` (its import.meta.url) is the script node was
 * started with; a failure is printed as "<name>: message" and sets the exit code to 1.
 */
export function runIfMain(moduleUrl: string, name: string, main: () => Promise<void>): void {
  const invokedAs = process.argv[1];
  if (invokedAs !== undefined && moduleUrl === pathToFileURL(path.resolve(invokedAs)).href) {
    main().catch((e: unknown) => {
      process.stderr.write(`${name}: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exitCode = 1;
    });
  }
}

/**
 * Runs every case once per round, `runs` rounds, in `order` (a, b, c, a, b, c, ...): interleaving
 * spreads the machine's drift over all cases alike. Returns the runs of each case.
 */
export async function runInterleaved<N extends string>(
  order: readonly N[],
  runs: number,
  timeCase: (name: N) => Promise<CpuRun>,
  log: (line: string) => void,
): Promise<Record<N, CpuRun[]>> {
  const samples = Object.fromEntries(order.map((name) => [name, [] as CpuRun[]])) as Record<N, CpuRun[]>;
  for (let i = 0; i < runs; i++) {
    for (const name of order) {
      const r = await timeCase(name);
      samples[name].push(r);
      log(`run ${i + 1}/${runs} ${name}: ${r.cpuS.toFixed(2)} s CPU (${r.wallS.toFixed(2)} s wall)`);
    }
  }
  return samples;
}
