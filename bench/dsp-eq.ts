/**
 * CPU benchmark of the parametriceq element against GStreamer's equalizer-nbands.
 *
 *   node --import=tsx bench/dsp-eq.ts [--runs N] [--cache-dir DIR] [--plugin-path DIR]
 *
 * 1. Generates once (cached in <tmpdir>/audioengine-bench, keyed by a hash of the ffmpeg
 *    command) a deterministic 10-minute stereo 48 kHz float WAV programme: pink noise plus two
 *    tones, a slow level LFO and 5 s of digital silence at the top of every minute.
 * 2. Runs, interleaved, N times each (after one untimed warm-up round):
 *      parametriceq      filesrc ! wavparse ! audioconvert ! parametriceq bands="..." ! fakesink
 *      equalizer-nbands  the same with equalizer-nbands num-bands=3, the same three peaking bands
 *      floor             the same with only audioconvert
 * 3. CPU seconds = user + system of the whole gst-launch-1.0 process, measured by GNU time
 *    (`/usr/bin/time -f "%U %S %e"`, Debian package `time`; resolution 10 ms).
 * 4. Prints a markdown table and a JSON object: medians, the ratio equalizer-nbands /
 *    parametriceq, and the same ratio net of the floor.
 *
 * The plugin is looked up in --plugin-path, else $GST_PLUGIN_PATH, else gst-plugins/build.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { access, mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { constants as fsConstants } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The bands the engine would write: freq:gain[:q] (q defaults to 1). */
export const EQ_BENCH_BANDS = '100:4,1000:-3:2.5,8000:2';

const SAMPLE_RATE = 48000;
const CHANNELS = 2;
const DEFAULT_DURATION_S = 600;
const GNU_TIME = '/usr/bin/time';

export type EqBenchCaseName = 'parametriceq' | 'equalizer-nbands' | 'floor';
const CASE_ORDER: readonly EqBenchCaseName[] = ['parametriceq', 'equalizer-nbands', 'floor'];

export interface EqBenchOptions {
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

export interface EqBenchRun {
  userS: number;
  sysS: number;
  cpuS: number;
  wallS: number;
}

export interface EqBenchCaseResult {
  name: EqBenchCaseName;
  /** the gst-launch-1.0 argv after `-q` */
  pipeline: string[];
  runs: EqBenchRun[];
  medianCpuS: number;
  medianWallS: number;
}

export interface EqBenchResult {
  programme: { path: string; durationS: number; sampleRate: number; channels: number };
  bands: string;
  runs: number;
  cases: Record<EqBenchCaseName, EqBenchCaseResult>;
  /** median CPU of equalizer-nbands / median CPU of parametriceq */
  ratioNbandsOverParametriceq: number;
  /** the same with the floor (filesrc, wavparse, audioconvert, process start) taken off both */
  ratioNbandsOverParametriceqNetOfFloor: number;
  cpuMeasure: string;
}

interface PeakBand {
  freq: number;
  gainDb: number;
  q: number;
}

function parseBands(bands: string): PeakBand[] {
  return bands.split(',').map((b) => {
    const [f, g, q] = b.split(':').map(Number);
    if (f === undefined || g === undefined || !Number.isFinite(f) || !Number.isFinite(g)) {
      throw new Error(`bad band ${b}`);
    }
    return { freq: f, gainDb: g, q: q ?? 1 };
  });
}

/**
 * equalizer-nbands designs its peak bands with alpha = tan(pi * bandwidth / rate) where the
 * RBJ cookbook has alpha = sin(w0) / (2 Q): this bandwidth (Hz) gives the identical biquad.
 */
export function nbandsBandwidthForQ(freq: number, q: number, rate: number): number {
  const w0 = (2 * Math.PI * freq) / rate;
  return (rate / Math.PI) * Math.atan(Math.sin(w0) / (2 * q));
}

function nbandsElement(bands: PeakBand[], rate: number): string[] {
  const args = ['equalizer-nbands', `num-bands=${bands.length}`];
  bands.forEach((b, i) => {
    // nbands makes the first band a low shelf and the last a high shelf unless told otherwise
    args.push(
      `band${i}::type=peak`,
      `band${i}::freq=${b.freq}`,
      `band${i}::bandwidth=${nbandsBandwidthForQ(b.freq, b.q, rate).toFixed(6)}`,
      `band${i}::gain=${b.gainDb}`,
    );
  });
  return args;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return Number.NaN;
  const mid = Math.floor(n / 2);
  const hi = s[mid] ?? Number.NaN;
  const lo = s[mid - 1] ?? hi;
  return n % 2 === 1 ? hi : (lo + hi) / 2;
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv): Promise<Exit> {
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

async function exists(p: string): Promise<boolean> {
  try {
    await access(p, fsConstants.F_OK);
    return true;
  } catch {
    return false;
  }
}

/** The programme file: generated once per distinct ffmpeg command. */
async function ensureProgramme(
  cacheDir: string,
  durationS: number,
  log: (l: string) => void,
): Promise<string> {
  const graph = [
    '[0:a]pan=stereo|c0=c0|c1=0.8*c0[n]',
    // pink noise + tones, slow level moves, 5 s of digital silence at the top of each minute
    "[n][1:a]amix=inputs=2:normalize=0,volume=volume='if(lt(mod(t\\,60)\\,5)\\,0\\," +
      "0.25+0.75*(0.5+0.5*sin(2*PI*t/41)))':eval=frame[out]",
  ].join(';');
  const args = [
    '-hide_banner', '-nostdin', '-loglevel', 'error', '-y',
    '-f', 'lavfi', '-i',
    `anoisesrc=color=pink:seed=20240601:sample_rate=${SAMPLE_RATE}:amplitude=0.3:duration=${durationS}`,
    '-f', 'lavfi', '-i',
    "aevalsrc=exprs='0.2*sin(2*PI*110*t)*(0.5+0.5*sin(2*PI*t/17))|" +
      `0.2*sin(2*PI*165*t)*(0.5+0.5*cos(2*PI*t/23))':s=${SAMPLE_RATE}:d=${durationS}`,
    '-filter_complex', graph, '-map', '[out]',
    '-c:a', 'pcm_f32le', '-fflags', '+bitexact', '-flags:a', '+bitexact', '-map_metadata', '-1',
  ];
  const key = createHash('sha256').update(JSON.stringify(args)).digest('hex').slice(0, 12);
  const file = path.join(cacheDir, `eq-programme-${durationS}s-${key}.wav`);
  if (await exists(file)) return file;

  await mkdir(cacheDir, { recursive: true });
  const partial = `${file}.${process.pid}.partial.wav`;
  log(`generating ${durationS} s programme ${file} (once) ...`);
  const r = await run('ffmpeg', [...args, partial], process.env);
  if (r.code !== 0) {
    await rm(partial, { force: true });
    throw new Error(`ffmpeg failed (${r.code ?? r.signal ?? '?'}): ${r.stderr.trim()}`);
  }
  await rename(partial, file);
  return file;
}

async function timeOne(
  pipeline: string[],
  env: NodeJS.ProcessEnv,
  workDir: string,
): Promise<EqBenchRun> {
  const out = path.join(workDir, 'time.txt');
  await rm(out, { force: true });
  const r = await run(
    GNU_TIME,
    ['-f', '%U %S %e', '-o', out, 'gst-launch-1.0', '-q', ...pipeline],
    env,
  );
  if (r.code !== 0) {
    throw new Error(
      `gst-launch-1.0 ${pipeline.join(' ')} failed (${r.code ?? r.signal ?? '?'}): ${r.stderr.trim()}`,
    );
  }
  const text = (await readFile(out, 'utf8')).trim().split('\n').pop() ?? '';
  const [u, s, e] = text.split(/\s+/).map(Number);
  if (u === undefined || s === undefined || e === undefined || [u, s, e].some(Number.isNaN)) {
    throw new Error(`cannot read GNU time output: ${text}`);
  }
  return { userS: u, sysS: s, cpuS: u + s, wallS: e };
}

function defaultPluginPath(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  return path.resolve(here, '..', 'gst-plugins', 'build');
}

export async function runEqBench(opts: EqBenchOptions = {}): Promise<EqBenchResult> {
  const runs = opts.runs ?? 5;
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`runs must be >= 1, got ${runs}`);
  const durationS = opts.durationS ?? DEFAULT_DURATION_S;
  const cacheDir = opts.cacheDir ?? path.join(tmpdir(), 'audioengine-bench');
  const log = opts.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const pluginPath = opts.pluginPath ?? process.env.GST_PLUGIN_PATH ?? defaultPluginPath();

  if (!(await exists(GNU_TIME))) {
    throw new Error(`${GNU_TIME} not found: apt-get install time`);
  }
  const pluginDirs = pluginPath.split(path.delimiter);
  const found = await Promise.all(
    pluginDirs.map((d) => exists(path.join(d, 'libgstaudioengine.so'))),
  );
  if (!found.some(Boolean)) {
    throw new Error(
      `libgstaudioengine.so not in ${pluginPath}: build gst-plugins (meson setup gst-plugins/build ` +
        'gst-plugins && ninja -C gst-plugins/build) or pass --plugin-path',
    );
  }

  const programme = await ensureProgramme(cacheDir, durationS, log);
  const workDir = await mkdtemp(path.join(tmpdir(), 'eq-bench-'));
  try {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      GST_PLUGIN_PATH: pluginPath,
      // a registry of our own: the scan happens in the warm-up round, not in a timed run
      GST_REGISTRY: path.join(workDir, 'registry.bin'),
      GST_DEBUG: '*:1',
    };
    const head = ['filesrc', `location="${programme}"`, '!', 'wavparse', '!', 'audioconvert'];
    const tail = ['!', 'fakesink'];
    const bands = parseBands(EQ_BENCH_BANDS);
    const pipelines: Record<EqBenchCaseName, string[]> = {
      parametriceq: [...head, '!', 'parametriceq', `bands="${EQ_BENCH_BANDS}"`, ...tail],
      'equalizer-nbands': [...head, '!', ...nbandsElement(bands, SAMPLE_RATE), ...tail],
      floor: [...head, ...tail],
    };
    const samples: Record<EqBenchCaseName, EqBenchRun[]> = {
      parametriceq: [],
      'equalizer-nbands': [],
      floor: [],
    };

    log('warm-up round (registry, page cache) ...');
    for (const name of CASE_ORDER) await timeOne(pipelines[name], env, workDir);
    for (let i = 0; i < runs; i++) {
      for (const name of CASE_ORDER) {
        const r = await timeOne(pipelines[name], env, workDir);
        samples[name].push(r);
        log(`run ${i + 1}/${runs} ${name}: ${r.cpuS.toFixed(2)} s CPU (${r.wallS.toFixed(2)} s wall)`);
      }
    }

    const result = (name: EqBenchCaseName): EqBenchCaseResult => ({
      name,
      pipeline: pipelines[name],
      runs: samples[name],
      medianCpuS: median(samples[name].map((r) => r.cpuS)),
      medianWallS: median(samples[name].map((r) => r.wallS)),
    });
    const cases: Record<EqBenchCaseName, EqBenchCaseResult> = {
      parametriceq: result('parametriceq'),
      'equalizer-nbands': result('equalizer-nbands'),
      floor: result('floor'),
    };
    const peq = cases.parametriceq.medianCpuS;
    const nb = cases['equalizer-nbands'].medianCpuS;
    const floor = cases.floor.medianCpuS;
    return {
      programme: { path: programme, durationS, sampleRate: SAMPLE_RATE, channels: CHANNELS },
      bands: EQ_BENCH_BANDS,
      runs,
      cases,
      ratioNbandsOverParametriceq: nb / peq,
      ratioNbandsOverParametriceqNetOfFloor: (nb - floor) / (peq - floor),
      cpuMeasure: 'user+sys of the gst-launch-1.0 process, GNU time -f "%U %S %e"',
    };
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

export function eqBenchMarkdown(r: EqBenchResult): string {
  const lines = [
    `parametriceq vs equalizer-nbands: ${r.programme.durationS} s stereo ${r.programme.sampleRate} Hz ` +
      `F32, bands ${r.bands}, ${r.runs} runs each, interleaved`,
    '',
    '| pipeline | median CPU s (user+sys) | median wall s | runs (CPU s) |',
    '|---|---:|---:|---|',
  ];
  for (const name of CASE_ORDER) {
    const c = r.cases[name];
    lines.push(
      `| ${name} | ${c.medianCpuS.toFixed(2)} | ${c.medianWallS.toFixed(2)} | ` +
        `${c.runs.map((x) => x.cpuS.toFixed(2)).join(', ')} |`,
    );
  }
  lines.push(
    '',
    `equalizer-nbands / parametriceq: ${r.ratioNbandsOverParametriceq.toFixed(2)}x ` +
      `(net of the floor: ${r.ratioNbandsOverParametriceqNetOfFloor.toFixed(2)}x)`,
  );
  return lines.join('\n');
}

function parseArgs(argv: string[]): EqBenchOptions {
  const opts: EqBenchOptions = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === '--runs') opts.runs = Number(value());
    else if (a === '--cache-dir') opts.cacheDir = value();
    else if (a === '--plugin-path') opts.pluginPath = value();
    else if (a === '--duration') opts.durationS = Number(value());
    else throw new Error(`unknown argument ${a} (--runs N, --cache-dir DIR, --plugin-path DIR, --duration S)`);
  }
  return opts;
}

async function main(): Promise<void> {
  const result = await runEqBench(parseArgs(process.argv.slice(2)));
  process.stdout.write(`${eqBenchMarkdown(result)}\n\n`);
  const summary = {
    bands: result.bands,
    runs: result.runs,
    medianCpuS: {
      parametriceq: result.cases.parametriceq.medianCpuS,
      'equalizer-nbands': result.cases['equalizer-nbands'].medianCpuS,
      floor: result.cases.floor.medianCpuS,
    },
    ratioNbandsOverParametriceq: Number(result.ratioNbandsOverParametriceq.toFixed(3)),
    ratioNbandsOverParametriceqNetOfFloor: Number(
      result.ratioNbandsOverParametriceqNetOfFloor.toFixed(3),
    ),
  };
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
}

const invokedAs = process.argv[1];
if (invokedAs !== undefined && import.meta.url === pathToFileURL(path.resolve(invokedAs)).href) {
  main().catch((e: unknown) => {
    process.stderr.write(`dsp-eq: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  });
}
