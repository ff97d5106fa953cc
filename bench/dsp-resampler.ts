/**
 * CPU and THD+N of the clockbridge resampler against GStreamer's `audioresample quality=10`
 * and ffmpeg's `aresample=resampler=soxr`, all at the same ratio, 48000 -> 48048 Hz (+1000 ppm,
 * the largest sender drift the clock bridge is specified for).
 *
 *   node --import=tsx bench/dsp-resampler.ts [--runs N] [--cache-dir DIR] [--plugin-path DIR] [--duration S]
 *
 * 1. Generates once (cached in <tmpdir>/audioengine-bench) a stereo 48 kHz raw F32LE file: a 997 Hz
 *    sine at -20 dBFS, --duration seconds (default 600), and a 30 s one for the quality figures.
 * 2. Runs, interleaved, N times each (after one untimed warm-up round), every case reading the
 *    same raw file and writing raw F32LE to /dev/null:
 *      clockbridge        gst-plugins/build/tests/clock/clock-resample 48000/48048 IN OUT: the
 *                         element's resampler (resampler.c, the same code, built the same way)
 *      clockbridge-floor  the same program copying its input (reads, writes, process start)
 *      audioresample      filesrc ! rawaudioparse ! audioresample quality=10 ! rate=48048 ! filesink
 *      gst-floor          the same without audioresample (rate 48000)
 *      soxr               ffmpeg -f f32le -i IN -af aresample=48048:resampler=soxr -f f32le OUT
 *      ffmpeg-floor       the same without the filter
 * 3. CPU seconds = user + system of the whole process (GNU time). Ratios are given for the whole
 *    processes and net of each tool's own floor.
 * 4. THD+N of each resampler on the 30 s file: channel 0 from 5 s to 25 s of the output, a
 *    least-squares fit of the tone at its known output frequency (997 x 48000 / 48048 per sample
 *    of 48000 Hz), residual RMS over tone RMS.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  benchSettings,
  checkBenchTools,
  cpuSummary,
  exists,
  exitReason,
  gstBenchEnv,
  parseScriptArgs,
  run,
  runIfMain,
  runInterleaved,
  timeCommand,
  type BenchOptions,
  type CpuRun,
} from './process.js';

const IN_RATE = 48000;
const OUT_RATE = 48048;
const TONE_HZ = 997;
const QUALITY_S = 30;

export type ResamplerCaseName =
  | 'clockbridge'
  | 'clockbridge-floor'
  | 'audioresample'
  | 'gst-floor'
  | 'soxr'
  | 'ffmpeg-floor';
export const RESAMPLER_CASE_ORDER: readonly ResamplerCaseName[] = [
  'clockbridge',
  'clockbridge-floor',
  'audioresample',
  'gst-floor',
  'soxr',
  'ffmpeg-floor',
];
type Resampler = 'clockbridge' | 'audioresample' | 'soxr';
const RESAMPLERS: readonly Resampler[] = ['clockbridge', 'audioresample', 'soxr'];
const FLOOR_OF: Record<Resampler, ResamplerCaseName> = {
  clockbridge: 'clockbridge-floor',
  audioresample: 'gst-floor',
  soxr: 'ffmpeg-floor',
};

export interface ResamplerCaseResult {
  name: ResamplerCaseName;
  command: string[];
  runs: CpuRun[];
  medianCpuS: number;
  medianWallS: number;
}

export interface ResamplerBenchResult {
  input: { durationS: number; inRate: number; outRate: number; toneHz: number; levelDbfs: number };
  runs: number;
  cases: Record<ResamplerCaseName, ResamplerCaseResult>;
  /** median CPU of the other tool / median CPU of the clockbridge resampler (whole processes) */
  ratioOverClockbridge: { audioresample: number; soxr: number };
  /** the same, each net of its own floor */
  ratioOverClockbridgeNetOfFloor: { audioresample: number; soxr: number };
  /** THD+N of the 997 Hz tone, dB relative to the tone (more negative is better) */
  thdNDb: Record<Resampler, number>;
  cpuMeasure: string;
}

/** A raw stereo F32LE file of the tone, made by ffmpeg once per distinct command. */
async function ensureTone(cacheDir: string, durationS: number, log: (l: string) => void): Promise<string> {
  const expr = `0.1*sin(2*PI*${TONE_HZ}*t)`;
  const args = [
    '-hide_banner', '-nostdin', '-loglevel', 'error', '-y',
    '-f', 'lavfi', '-i', `aevalsrc=${expr}|${expr}:s=${IN_RATE}:d=${durationS}`,
    '-c:a', 'pcm_f32le', '-f', 'f32le',
  ];
  const key = createHash('sha256').update(JSON.stringify(args)).digest('hex').slice(0, 12);
  const file = path.join(cacheDir, `resampler-tone-${durationS}s-${key}.f32`);
  if (await exists(file)) return file;
  await mkdir(cacheDir, { recursive: true });
  const partial = `${file}.${process.pid}.partial`;
  log(`generating ${durationS} s tone ${file} (once) ...`);
  const r = await run('ffmpeg', [...args, partial], process.env);
  if (r.code !== 0) {
    await rm(partial, { force: true });
    throw new Error(`ffmpeg failed ${exitReason(r)}: ${r.stderr.trim()}`);
  }
  await rename(partial, file);
  return file;
}

/** argv of each case reading `input` and writing raw F32LE to `output`. */
function commands(tool: string, input: string, output: string): Record<ResamplerCaseName, string[]> {
  const parse = [
    'gst-launch-1.0', '-q', 'filesrc', `location=${input}`, '!', 'rawaudioparse', 'use-sink-caps=false',
    'format=pcm', 'pcm-format=f32le', `sample-rate=${IN_RATE}`, 'num-channels=2',
  ];
  const ffIn = ['ffmpeg', '-hide_banner', '-nostdin', '-loglevel', 'error', '-y', '-f', 'f32le', '-ar', String(IN_RATE), '-ac', '2', '-i', input];
  return {
    clockbridge: [tool, String(IN_RATE / OUT_RATE), input, output],
    'clockbridge-floor': [tool, '--floor', input, output],
    audioresample: [...parse, '!', 'audioresample', 'quality=10', '!', `audio/x-raw,rate=${OUT_RATE}`, '!', 'filesink', `location=${output}`],
    'gst-floor': [...parse, '!', `audio/x-raw,rate=${IN_RATE}`, '!', 'filesink', `location=${output}`],
    soxr: [...ffIn, '-af', `aresample=${OUT_RATE}:resampler=soxr`, '-f', 'f32le', output],
    'ffmpeg-floor': [...ffIn, '-f', 'f32le', output],
  };
}

/**
 * THD+N in dB: least-squares fit of a cos + b sin + c at `w` rad/sample over `x`, residual power
 * over tone power.
 */
export function thdNDb(x: Float32Array, w: number): number {
  const s = [
    [0, 0, 0],
    [0, 0, 0],
    [0, 0, 0],
  ];
  const v = [0, 0, 0];
  const basis = (i: number): [number, number, number] => [Math.cos(w * i), Math.sin(w * i), 1];
  for (let i = 0; i < x.length; i++) {
    const b = basis(i);
    const xi = x[i] ?? 0;
    for (let a = 0; a < 3; a++) {
      v[a] = (v[a] ?? 0) + (b[a] ?? 0) * xi;
      const row = s[a] ?? [];
      for (let c = 0; c < 3; c++) row[c] = (row[c] ?? 0) + (b[a] ?? 0) * (b[c] ?? 0);
    }
  }
  // Gaussian elimination on the 3x3 normal equations
  const m = s.map((row, i) => [...row, v[i] ?? 0]);
  for (let p = 0; p < 3; p++) {
    const pivot = m[p] ?? [];
    for (let q = p + 1; q < 3; q++) {
      const row = m[q] ?? [];
      const f = (row[p] ?? 0) / (pivot[p] ?? 1);
      for (let k = p; k < 4; k++) row[k] = (row[k] ?? 0) - f * (pivot[k] ?? 0);
    }
  }
  const coef = [0, 0, 0];
  for (let p = 2; p >= 0; p--) {
    const row = m[p] ?? [];
    let acc = row[3] ?? 0;
    for (let k = p + 1; k < 3; k++) acc -= (row[k] ?? 0) * (coef[k] ?? 0);
    coef[p] = acc / (row[p] ?? 1);
  }
  const [ca = 0, cb = 0, cc = 0] = coef;
  let r2 = 0;
  for (let i = 0; i < x.length; i++) {
    const e = (x[i] ?? 0) - (ca * Math.cos(w * i) + cb * Math.sin(w * i) + cc);
    r2 += e * e;
  }
  const amp = Math.hypot(ca, cb);
  return 10 * Math.log10(r2 / x.length / ((amp * amp) / 2));
}

/** THD+N of channel 0 of a raw stereo F32LE output, from 5 s for 20 s (of OUT_RATE samples). */
async function outputThdN(file: string): Promise<number> {
  const buf = await readFile(file);
  const all = new Float32Array(buf.buffer, buf.byteOffset, Math.floor(buf.byteLength / 4));
  const start = 5 * OUT_RATE;
  const n = 20 * OUT_RATE;
  if (all.length < 2 * (start + n)) throw new Error(`${file}: output too short (${all.length / 2} frames)`);
  const ch0 = new Float32Array(n);
  for (let i = 0; i < n; i++) ch0[i] = all[2 * (start + i)] ?? 0;
  // the phase origin does not matter to the fit; the frequency does
  return thdNDb(ch0, (2 * Math.PI * TONE_HZ) / OUT_RATE);
}

export async function runResamplerBench(opts: BenchOptions = {}): Promise<ResamplerBenchResult> {
  const { runs, durationS, cacheDir, log, pluginPath } = benchSettings(opts);
  await checkBenchTools(pluginPath);
  const tool = path.join(pluginPath.split(path.delimiter)[0] ?? '', 'tests', 'clock', 'clock-resample');
  if (!(await exists(tool))) throw new Error(`${tool} not found: build gst-plugins (ninja -C gst-plugins/build)`);

  const input = await ensureTone(cacheDir, durationS, log);
  const qualityInput = await ensureTone(cacheDir, QUALITY_S, log);
  const workDir = await mkdtemp(path.join(tmpdir(), 'resampler-bench-'));
  try {
    const env = gstBenchEnv(pluginPath, workDir);
    const timed = commands(tool, input, '/dev/null');

    // quality (untimed, also the warm-up of the registry and the page cache)
    const thd = {} as Record<Resampler, number>;
    for (const name of RESAMPLERS) {
      const out = path.join(workDir, `${name}.f32`);
      const argv = commands(tool, qualityInput, out)[name];
      const r = await run(argv[0] ?? '', argv.slice(1), env);
      if (r.code !== 0) throw new Error(`${argv.join(' ')} failed ${exitReason(r)}: ${r.stderr.trim()}`);
      thd[name] = await outputThdN(out);
      await rm(out, { force: true });
      log(`${name}: THD+N ${thd[name].toFixed(1)} dB`);
    }
    const timeOne = (name: ResamplerCaseName): Promise<CpuRun> => timeCommand(timed[name], env, workDir, timed[name].join(' '));
    log('warm-up round ...');
    for (const name of RESAMPLER_CASE_ORDER) await timeOne(name);
    const samples = await runInterleaved(RESAMPLER_CASE_ORDER, runs, timeOne, log);

    const cases = Object.fromEntries(
      RESAMPLER_CASE_ORDER.map((name) => [name, { name, command: timed[name], ...cpuSummary(samples[name]) }]),
    ) as Record<ResamplerCaseName, ResamplerCaseResult>;
    const cpu = (name: ResamplerCaseName): number => cases[name].medianCpuS;
    const net = (name: Resampler): number => cpu(name) - cpu(FLOOR_OF[name]);
    return {
      input: { durationS, inRate: IN_RATE, outRate: OUT_RATE, toneHz: TONE_HZ, levelDbfs: -20 },
      runs,
      cases,
      ratioOverClockbridge: {
        audioresample: cpu('audioresample') / cpu('clockbridge'),
        soxr: cpu('soxr') / cpu('clockbridge'),
      },
      ratioOverClockbridgeNetOfFloor: {
        audioresample: net('audioresample') / net('clockbridge'),
        soxr: net('soxr') / net('clockbridge'),
      },
      thdNDb: thd,
      cpuMeasure: 'user+sys of the whole process, GNU time -f "%U %S %e"',
    };
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

function fmt(x: number, digits = 2): string {
  return Number.isFinite(x) ? x.toFixed(digits) : 'n/a';
}

/** Markdown lines for bench/run.ts and for this script. */
export function resamplerBenchMarkdown(r: ResamplerBenchResult): string {
  const lines = [
    `Resamplers at ${r.input.inRate} -> ${r.input.outRate} Hz, ${r.input.durationS} s stereo F32, ${r.runs} runs each (median):`,
    '',
    '| case | median CPU s (user+sys) | median wall s | runs (CPU s) |',
    '|---|---:|---:|---|',
  ];
  for (const name of RESAMPLER_CASE_ORDER) {
    const c = r.cases[name];
    lines.push(`| ${name} | ${fmt(c.medianCpuS)} | ${fmt(c.medianWallS)} | ${c.runs.map((x) => fmt(x.cpuS)).join(', ')} |`);
  }
  lines.push(
    '',
    `- audioresample quality=10 / clockbridge = **${fmt(r.ratioOverClockbridge.audioresample)}x** ` +
      `(net of each floor ${fmt(r.ratioOverClockbridgeNetOfFloor.audioresample)}x); ` +
      `soxr / clockbridge = **${fmt(r.ratioOverClockbridge.soxr)}x** (net ${fmt(r.ratioOverClockbridgeNetOfFloor.soxr)}x)`,
    `- THD+N of ${r.input.toneHz} Hz at ${r.input.levelDbfs} dBFS: clockbridge ${fmt(r.thdNDb.clockbridge, 1)} dB, ` +
      `audioresample ${fmt(r.thdNDb.audioresample, 1)} dB, soxr ${fmt(r.thdNDb.soxr, 1)} dB`,
  );
  return lines.join('\n');
}

async function main(): Promise<void> {
  const result = await runResamplerBench(parseScriptArgs(process.argv.slice(2)));
  process.stdout.write(`${resamplerBenchMarkdown(result)}\n`);
}

runIfMain(import.meta.url, 'dsp-resampler', main);
