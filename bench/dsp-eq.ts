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
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  benchSettings,
  checkBenchTools,
  cpuSummary,
  runInterleaved,
  exists,
  exitReason,
  gstBenchEnv,
  parseScriptArgs,
  run,
  runIfMain,
  timeCommand,
  type BenchOptions,
  type CpuRun,
} from './process.js';

/** The bands the engine would write: freq:gain[:q] (q defaults to 1). */
export const EQ_BENCH_BANDS = '100:4,1000:-3:2.5,8000:2';

const SAMPLE_RATE = 48000;
const CHANNELS = 2;

export type EqBenchCaseName = 'parametriceq' | 'equalizer-nbands' | 'floor';
const CASE_ORDER: readonly EqBenchCaseName[] = ['parametriceq', 'equalizer-nbands', 'floor'];

export type EqBenchOptions = BenchOptions;

export type EqBenchRun = CpuRun;

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
    throw new Error(`ffmpeg failed ${exitReason(r)}: ${r.stderr.trim()}`);
  }
  await rename(partial, file);
  return file;
}

function timeOne(pipeline: string[], env: NodeJS.ProcessEnv, workDir: string): Promise<EqBenchRun> {
  return timeCommand(['gst-launch-1.0', '-q', ...pipeline], env, workDir, `gst-launch-1.0 ${pipeline.join(' ')}`);
}

export async function runEqBench(opts: EqBenchOptions = {}): Promise<EqBenchResult> {
  const { runs, durationS, cacheDir, log, pluginPath } = benchSettings(opts);
  await checkBenchTools(pluginPath);

  const programme = await ensureProgramme(cacheDir, durationS, log);
  const workDir = await mkdtemp(path.join(tmpdir(), 'eq-bench-'));
  try {
    const env = gstBenchEnv(pluginPath, workDir);
    const head = ['filesrc', `location="${programme}"`, '!', 'wavparse', '!', 'audioconvert'];
    const tail = ['!', 'fakesink'];
    const bands = parseBands(EQ_BENCH_BANDS);
    const pipelines: Record<EqBenchCaseName, string[]> = {
      parametriceq: [...head, '!', 'parametriceq', `bands="${EQ_BENCH_BANDS}"`, ...tail],
      'equalizer-nbands': [...head, '!', ...nbandsElement(bands, SAMPLE_RATE), ...tail],
      floor: [...head, ...tail],
    };
    log('warm-up round (registry, page cache) ...');
    for (const name of CASE_ORDER) await timeOne(pipelines[name], env, workDir);
    const samples = await runInterleaved(CASE_ORDER, runs, (name) => timeOne(pipelines[name], env, workDir), log);

    const result = (name: EqBenchCaseName): EqBenchCaseResult => ({
      name,
      pipeline: pipelines[name],
      ...cpuSummary(samples[name]),
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

async function main(): Promise<void> {
  const result = await runEqBench(parseScriptArgs(process.argv.slice(2)));
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

runIfMain(import.meta.url, 'dsp-eq', main);
