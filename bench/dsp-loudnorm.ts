/**
 * CPU benchmark of the loudnorm element against ffmpeg's loudnorm filter, and the loudness
 * each one actually delivers.
 *
 *   node --import=tsx bench/dsp-loudnorm.ts [--runs N] [--cache-dir DIR] [--plugin-path DIR] [--duration S]
 *
 * 1. Generates once (cached in <tmpdir>/audioengine-bench, keyed by the generator version and
 *    the length) a deterministic 10-minute stereo 48 kHz 16-bit WAV programme, written by the
 *    generator below (seeded PRNG, no ffmpeg): 4 s segments of speech-like material (a pitched
 *    harmonic source with formants, syllables and pauses, mono) and music-like material
 *    (panned chords with decaying notes, a bass line and noise percussion), each at a level
 *    drawn within ±15 dB of -30 dBFS RMS, and 1.5 s of digital silence every 19.3 s.
 * 2. Runs, interleaved, N times each (after one untimed warm-up round of the two GStreamer
 *    cases; the loudness runs of step 4 warm ffmpeg and the page cache):
 *      loudnorm         gst-launch-1.0 filesrc ! wavparse ! audioconvert ! loudnorm target=-23 ! fakesink
 *      ffmpeg-loudnorm  ffmpeg -i prog.wav -af loudnorm=I=-23:TP=-1:LRA=11 -f null -
 *      floor            gst-launch-1.0 filesrc ! wavparse ! audioconvert ! audio/x-raw,format=F32LE ! fakesink
 * 3. CPU seconds = user + system of the whole process, measured by GNU time
 *    (`/usr/bin/time -f "%U %S %e"`, Debian package `time`; resolution 10 ms).
 * 4. Renders each normaliser's output once to a WAV file and measures it, and the input, with
 *    an independent meter (ffmpeg `ebur128=peak=true`, test/helpers/loudness-meter.ts).
 *
 * The plugin is looked up in --plugin-path, else $GST_PLUGIN_PATH, else gst-plugins/build.
 */
import { mkdir, mkdtemp, open, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { measureFile, type LoudnessMeasure } from '../test/helpers/loudness-meter.js';
import { wavHeader } from '../test/helpers/wav.js';
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

export const LOUDNORM_BENCH_TARGET = -23;
export const FFMPEG_LOUDNORM_FILTER = 'loudnorm=I=-23:TP=-1:LRA=11';

const SAMPLE_RATE = 48000;
const CHANNELS = 2;
/** Bump when the generator changes: the cached file name depends on it. */
const GENERATOR_VERSION = 'v1';

export type LoudnormBenchCaseName = 'loudnorm' | 'ffmpeg-loudnorm' | 'floor';
export const LOUDNORM_CASE_ORDER: readonly LoudnormBenchCaseName[] = ['loudnorm', 'ffmpeg-loudnorm', 'floor'];

export type LoudnormBenchOptions = BenchOptions;

export type LoudnormBenchRun = CpuRun;

export interface LoudnormBenchCaseResult {
  name: LoudnormBenchCaseName;
  /** the full argv (after GNU time) */
  command: string[];
  runs: LoudnormBenchRun[];
  medianCpuS: number;
  medianWallS: number;
}

export interface LoudnormBenchResult {
  programme: { path: string; durationS: number; sampleRate: number; channels: number; generator: string };
  target: number;
  runs: number;
  cases: Record<LoudnormBenchCaseName, LoudnormBenchCaseResult>;
  /** median CPU of ffmpeg loudnorm / median CPU of our loudnorm */
  ratioFfmpegOverOurs: number;
  /** the same with the floor (file reading, parsing, conversion, process start) taken off both */
  ratioFfmpegOverOursNetOfFloor: number;
  /** measured by ffmpeg ebur128 (independent of our element) */
  loudness: { input: LoudnessMeasure; ours: LoudnessMeasure; ffmpeg: LoudnessMeasure };
  cpuMeasure: string;
  loudnessMeasure: string;
}

// ---------------------------------------------------------------------------------------------
// The programme

/** mulberry32: a small deterministic PRNG, uniform in [0, 1). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const TABLE = 2048;

/** One period of a harmonic waveform, harmonics 1..n with the given amplitudes, peak 1. */
function wavetable(amplitudes: number[]): Float64Array {
  const table = new Float64Array(TABLE + 1);
  let peak = 0;
  for (let i = 0; i < TABLE; i++) {
    let v = 0;
    for (let h = 0; h < amplitudes.length; h++) v += (amplitudes[h] ?? 0) * Math.sin((2 * Math.PI * (h + 1) * i) / TABLE);
    table[i] = v;
    peak = Math.max(peak, Math.abs(v));
  }
  for (let i = 0; i < TABLE; i++) table[i] = (table[i] ?? 0) / (peak || 1);
  table[TABLE] = table[0] ?? 0;
  return table;
}

function lookup(table: Float64Array, phase: number): number {
  const x = phase * TABLE;
  const i = Math.floor(x);
  const f = x - i;
  const a = table[i] ?? 0;
  return a + f * ((table[i + 1] ?? 0) - a);
}

const SEGMENT_S = 4;
const SILENCE_PERIOD_S = 19.3;
const SILENCE_S = 1.5;
const NOMINAL_RMS_DBFS = -30;
const LEVEL_SPREAD_DB = 15;

function speechSegment(rng: () => number, left: Float64Array, right: Float64Array): void {
  const f0 = 90 + rng() * 130;
  const f1 = 300 + rng() * 500;
  const f2 = 900 + rng() * 1600;
  const harmonics = Math.floor(7500 / (f0 * 1.25));
  const amps: number[] = [];
  for (let h = 1; h <= harmonics; h++) {
    const f = h * f0;
    amps.push((1 / h) * (1 + 4 * Math.exp(-(((f - f1) / 150) ** 2)) + 3 * Math.exp(-(((f - f2) / 250) ** 2))));
  }
  const table = wavetable(amps);
  const syllableRate = 3.5 + rng() * 2;
  const syllablesOn: boolean[] = [];
  const fricative: boolean[] = [];
  for (let i = 0; i < Math.ceil(SEGMENT_S * syllableRate) + 1; i++) {
    syllablesOn.push(rng() < 0.85);
    fricative.push(rng() < 0.3);
  }
  const glide = rng() * 2 * Math.PI;
  let phase = 0;
  let prevNoise = 0;
  for (let n = 0; n < left.length; n++) {
    const t = n / SAMPLE_RATE;
    const s = t * syllableRate;
    const k = Math.floor(s);
    const within = s - k;
    const env = syllablesOn[k] === true ? Math.sin(Math.PI * within) ** 2 : 0;
    const f = f0 * (1 + 0.15 * Math.sin(2 * Math.PI * 0.7 * t + glide) + 0.04 * Math.sin(2 * Math.PI * 5.3 * t));
    phase += f / SAMPLE_RATE;
    phase -= Math.floor(phase);
    const white = rng() * 2 - 1;
    const hiss = white - prevNoise; // first difference: a high-passed noise
    prevNoise = white;
    const noiseEnv = fricative[k] === true && within > 0.6 ? 0.35 : 0.03;
    const v = env * (lookup(table, phase) + noiseEnv * hiss);
    left[n] = v;
    right[n] = v;
  }
}

function midiHz(note: number): number {
  return 440 * 2 ** ((note - 69) / 12);
}

function musicSegment(rng: () => number, left: Float64Array, right: Float64Array): void {
  const timbre = wavetable(Array.from({ length: 12 }, (_, h) => 0.6 ** h));
  const bassTable = wavetable([1, 0.5, 0.25]);
  const root = 48 + Math.floor(rng() * 12);
  const chords = [[0, 4, 7], [5, 9, 12], [7, 11, 14], [-3, 0, 4]];
  const noteS = rng() < 0.5 ? 0.5 : 0.375;
  const beatS = noteS / 2;
  const pans = [0.2 + rng() * 0.2, 0.45 + rng() * 0.1, 0.6 + rng() * 0.2];
  const phases = [0, 0, 0];
  let bassPhase = 0;
  let chordIndex = -1;
  let freqs = [0, 0, 0];
  let bassHz = 0;
  let lp = 0;
  for (let n = 0; n < left.length; n++) {
    const t = n / SAMPLE_RATE;
    const k = Math.floor(t / noteS);
    if (k !== chordIndex) {
      chordIndex = k;
      const chord = chords[Math.floor(rng() * chords.length)] ?? [0, 4, 7];
      freqs = chord.map((c) => midiHz(root + c));
      bassHz = midiHz(root - 12 + (chord[0] ?? 0));
    }
    const sinceNote = t - k * noteS;
    const env = Math.min(1, sinceNote / 0.005) * (0.3 + 0.7 * Math.exp(-sinceNote / 0.4));
    let l = 0;
    let r = 0;
    for (let i = 0; i < 3; i++) {
      const ph = (phases[i] ?? 0) + (freqs[i] ?? 0) / SAMPLE_RATE;
      phases[i] = ph - Math.floor(ph);
      const v = env * lookup(timbre, phases[i] ?? 0);
      const pan = pans[i] ?? 0.5;
      l += v * Math.cos((pan * Math.PI) / 2);
      r += v * Math.sin((pan * Math.PI) / 2);
    }
    bassPhase += bassHz / SAMPLE_RATE;
    bassPhase -= Math.floor(bassPhase);
    const bass = 0.8 * env * lookup(bassTable, bassPhase);
    const sinceBeat = t - Math.floor(t / beatS) * beatS;
    lp += 0.3 * (rng() * 2 - 1 - lp); // low-passed noise
    const perc = 0.9 * Math.exp(-sinceBeat / 0.03) * lp;
    left[n] = 0.5 * l + bass + perc;
    right[n] = 0.5 * r + bass + perc;
  }
}

/** Writes the programme as a 16-bit stereo WAV file. Deterministic: the same bytes every time. */
export async function writeLoudnormProgramme(file: string, durationS: number): Promise<void> {
  const totalFrames = Math.round(durationS * SAMPLE_RATE);
  const segmentFrames = SEGMENT_S * SAMPLE_RATE;
  const dataBytes = totalFrames * CHANNELS * 2;
  const header = wavHeader({ format: 'pcm', channels: CHANNELS, rate: SAMPLE_RATE, bitsPerSample: 16, dataBytes });

  const rng = prng(20240611);
  const handle = await open(file, 'w');
  try {
    await handle.write(header);
    const left = new Float64Array(segmentFrames);
    const right = new Float64Array(segmentFrames);
    for (let start = 0; start < totalFrames; start += segmentFrames) {
      const speech = rng() < 0.5;
      const levelDb = NOMINAL_RMS_DBFS + (rng() * 2 - 1) * LEVEL_SPREAD_DB;
      if (speech) speechSegment(rng, left, right);
      else musicSegment(rng, left, right);
      let power = 0;
      for (let n = 0; n < segmentFrames; n++) power += (left[n] ?? 0) ** 2 + (right[n] ?? 0) ** 2;
      const rms = Math.sqrt(power / (2 * segmentFrames)) || 1;
      const scale = 10 ** (levelDb / 20) / rms;
      const frames = Math.min(segmentFrames, totalFrames - start);
      const out = Buffer.alloc(frames * CHANNELS * 2);
      for (let n = 0; n < frames; n++) {
        const t = (start + n) / SAMPLE_RATE;
        const silent = t % SILENCE_PERIOD_S >= SILENCE_PERIOD_S - SILENCE_S;
        const l = silent ? 0 : Math.max(-0.98, Math.min(0.98, (left[n] ?? 0) * scale));
        const r = silent ? 0 : Math.max(-0.98, Math.min(0.98, (right[n] ?? 0) * scale));
        out.writeInt16LE(Math.round(l * 32767), n * 4);
        out.writeInt16LE(Math.round(r * 32767), n * 4 + 2);
      }
      await handle.write(out);
    }
  } finally {
    await handle.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Running and timing

async function ensureProgramme(cacheDir: string, durationS: number, log: (l: string) => void): Promise<string> {
  const file = path.join(cacheDir, `loudnorm-programme-${durationS}s-${GENERATOR_VERSION}.wav`);
  if (await exists(file)) return file;
  await mkdir(cacheDir, { recursive: true });
  const partial = `${file}.${process.pid}.partial`;
  log(`generating ${durationS} s programme ${file} (once) ...`);
  try {
    await writeLoudnormProgramme(partial, durationS);
  } catch (e) {
    await rm(partial, { force: true });
    throw e;
  }
  await rename(partial, file);
  return file;
}

async function runOk(command: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const [cmd, ...args] = command;
  if (cmd === undefined) throw new Error('empty command');
  const r = await run(cmd, args, env);
  if (r.code !== 0) throw new Error(`${command.join(' ')} failed ${exitReason(r)}: ${r.stderr.trim()}`);
}

export async function runLoudnormBench(opts: LoudnormBenchOptions = {}): Promise<LoudnormBenchResult> {
  const { runs, durationS, cacheDir, log, pluginPath } = benchSettings(opts);
  if (!Number.isFinite(durationS) || durationS < 10) throw new Error(`duration must be >= 10 s, got ${durationS}`);
  await checkBenchTools(pluginPath);

  const programme = await ensureProgramme(cacheDir, durationS, log);
  const workDir = await mkdtemp(path.join(tmpdir(), 'loudnorm-bench-'));
  try {
    const env = gstBenchEnv(pluginPath, workDir);
    const head = ['gst-launch-1.0', '-q', 'filesrc', `location="${programme}"`, '!', 'wavparse', '!', 'audioconvert'];
    const ours = ['!', 'loudnorm', `target=${LOUDNORM_BENCH_TARGET}`];
    const ffmpegHead = ['ffmpeg', '-nostdin', '-hide_banner', '-loglevel', 'error', '-i', programme, '-af', FFMPEG_LOUDNORM_FILTER];
    const commands: Record<LoudnormBenchCaseName, string[]> = {
      loudnorm: [...head, ...ours, '!', 'fakesink'],
      'ffmpeg-loudnorm': [...ffmpegHead, '-f', 'null', '-'],
      // converts to F32 like the loudnorm case does (the programme is 16-bit)
      floor: [...head, '!', 'audio/x-raw,format=F32LE', '!', 'fakesink'],
    };

    log('warm-up round (registry, page cache) ...');
    await timeCommand(commands.floor, env, workDir);
    await timeCommand(commands.loudnorm, env, workDir);

    log('rendering both normalisers\' output once and measuring it (ffmpeg ebur128) ...');
    const oursWav = path.join(workDir, 'ours.wav');
    const ffmpegWav = path.join(workDir, 'ffmpeg.wav');
    await runOk([...head, ...ours, '!', 'audioconvert', '!', 'audio/x-raw,format=F32LE', '!', 'wavenc', '!', 'filesink', `location="${oursWav}"`], env);
    // ffmpeg's loudnorm outputs 192 kHz: resampled to the programme's rate, as a user would
    await runOk([...ffmpegHead, '-ar', String(SAMPLE_RATE), '-c:a', 'pcm_f32le', '-y', ffmpegWav], env);
    const [input, oursLoudness, ffmpegLoudness] = [await measureFile(programme), await measureFile(oursWav), await measureFile(ffmpegWav)];
    await rm(oursWav, { force: true });
    await rm(ffmpegWav, { force: true });
    log(
      `input: ${input.integratedLufs.toFixed(2)} LUFS; ours: ${oursLoudness.integratedLufs.toFixed(2)} LUFS, ` +
        `ffmpeg: ${ffmpegLoudness.integratedLufs.toFixed(2)} LUFS`,
    );

    const samples = await runInterleaved(LOUDNORM_CASE_ORDER, runs, (name) => timeCommand(commands[name], env, workDir), log);

    const result = (name: LoudnormBenchCaseName): LoudnormBenchCaseResult => ({
      name,
      command: commands[name],
      ...cpuSummary(samples[name]),
    });
    const cases: Record<LoudnormBenchCaseName, LoudnormBenchCaseResult> = {
      loudnorm: result('loudnorm'),
      'ffmpeg-loudnorm': result('ffmpeg-loudnorm'),
      floor: result('floor'),
    };
    const oursCpu = cases.loudnorm.medianCpuS;
    const ffCpu = cases['ffmpeg-loudnorm'].medianCpuS;
    const floor = cases.floor.medianCpuS;
    return {
      programme: { path: programme, durationS, sampleRate: SAMPLE_RATE, channels: CHANNELS, generator: GENERATOR_VERSION },
      target: LOUDNORM_BENCH_TARGET,
      runs,
      cases,
      ratioFfmpegOverOurs: ffCpu / oursCpu,
      ratioFfmpegOverOursNetOfFloor: (ffCpu - floor) / (oursCpu - floor),
      loudness: { input, ours: oursLoudness, ffmpeg: ffmpegLoudness },
      cpuMeasure: 'user+sys of the whole process (gst-launch-1.0 or ffmpeg), GNU time -f "%U %S %e"',
      loudnessMeasure: 'ffmpeg -af ebur128=peak=true on a Float32 WAV of each output (test/helpers/loudness-meter.ts)',
    };
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

function lufs(m: LoudnessMeasure): string {
  return `${m.integratedLufs.toFixed(2)} LUFS (LRA ${m.lraLu.toFixed(1)} LU, true peak ${m.truePeakDbtp.toFixed(1)} dBTP)`;
}

/** "ours: -23.xx LUFS, ffmpeg: -2x.xx LUFS" */
export function loudnormLoudnessLine(r: LoudnormBenchResult): string {
  return `ours: ${r.loudness.ours.integratedLufs.toFixed(2)} LUFS, ffmpeg: ${r.loudness.ffmpeg.integratedLufs.toFixed(2)} LUFS (target ${r.target})`;
}

export function loudnormBenchMarkdown(r: LoudnormBenchResult): string {
  const lines = [
    `loudnorm vs ffmpeg loudnorm: ${r.programme.durationS} s stereo ${r.programme.sampleRate} Hz S16 programme ` +
      `(generator ${r.programme.generator}), target ${r.target} LUFS, ${r.runs} runs each, interleaved`,
    '',
    '| command | median CPU s (user+sys) | median wall s | x real time (CPU) | runs (CPU s) |',
    '|---|---:|---:|---:|---|',
  ];
  for (const name of LOUDNORM_CASE_ORDER) {
    const c = r.cases[name];
    lines.push(
      `| ${name} | ${c.medianCpuS.toFixed(2)} | ${c.medianWallS.toFixed(2)} | ` +
        `${(r.programme.durationS / c.medianCpuS).toFixed(0)} | ${c.runs.map((x) => x.cpuS.toFixed(2)).join(', ')} |`,
    );
  }
  lines.push(
    '',
    `ffmpeg loudnorm / ours: ${r.ratioFfmpegOverOurs.toFixed(1)}x (net of the floor: ${r.ratioFfmpegOverOursNetOfFloor.toFixed(1)}x)`,
    `${loudnormLoudnessLine(r)}`,
    `input: ${lufs(r.loudness.input)}; ours: ${lufs(r.loudness.ours)}; ffmpeg: ${lufs(r.loudness.ffmpeg)}`,
  );
  return lines.join('\n');
}

async function main(): Promise<void> {
  const result = await runLoudnormBench(parseScriptArgs(process.argv.slice(2)));
  process.stdout.write(`${loudnormBenchMarkdown(result)}\n`);
}

runIfMain(import.meta.url, 'dsp-loudnorm', main);
