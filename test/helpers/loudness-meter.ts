/**
 * An independent loudness meter for tests and benchmarks: it does not use our `loudnorm`
 * element at all. Samples are written to a Float32 WAV file and measured by ffmpeg's `ebur128`
 * filter (ITU-R BS.1770-4 / EBU R128, true peak by 4x oversampling):
 *
 *   ffmpeg -nostats -i file.wav -af ebur128=peak=true:metadata=1,ametadata=print:... -f null -
 *
 * The Summary on stderr gives I, LRA and the true peak to 0.1; the per-frame metadata gives
 * the integrated loudness to 0.001 LU (its last value, after the whole file).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { wavHeader } from './wav.js';

export interface LoudnessMeasure {
  /** Integrated (gated) loudness, LUFS: the last `lavfi.r128.I` (0.001), else the Summary (0.1). */
  integratedLufs: number;
  /** The Summary's `I:` line, LUFS (0.1 resolution). */
  summaryIntegratedLufs: number;
  /** Loudness range, LU. */
  lraLu: number;
  /** Maximum true peak over all channels, dBTP (ffmpeg prints it as "dBFS"). */
  truePeakDbtp: number;
}

export interface EbuSummary {
  integratedLufs: number;
  lraLu: number;
  truePeakDbtp: number | undefined;
}

function summaryNumber(section: string, label: string): number | undefined {
  const m = new RegExp(`^\\s*${label}:\\s+(-?(?:\\d+(?:\\.\\d+)?|inf))\\s`, 'm').exec(section);
  if (m?.[1] === undefined) return undefined;
  return m[1] === '-inf' ? Number.NEGATIVE_INFINITY : Number(m[1]);
}

/** Parses the `Summary:` block that ffmpeg's ebur128 filter prints at the end of stderr. */
export function parseEbur128Summary(stderr: string): EbuSummary {
  const at = stderr.lastIndexOf('Summary:');
  if (at < 0) throw new Error(`no ebur128 Summary in ffmpeg output: ${stderr.slice(-2000)}`);
  const section = stderr.slice(at);
  const integrated = summaryNumber(section, 'I');
  const lra = summaryNumber(section, 'LRA');
  if (integrated === undefined || lra === undefined) {
    throw new Error(`cannot read I / LRA from the ebur128 Summary: ${section}`);
  }
  return { integratedLufs: integrated, lraLu: lra, truePeakDbtp: summaryNumber(section, 'Peak') };
}

interface Exit {
  code: number | null;
  stderr: string;
}

function run(cmd: string, args: string[]): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (d: string) => {
      stderr += d;
      if (stderr.length > 256 * 1024) stderr = stderr.slice(-128 * 1024);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

/** Measures a WAV (or any file ffmpeg reads) with ffmpeg's ebur128 filter. */
export async function measureFile(file: string): Promise<LoudnessMeasure> {
  const dir = await mkdtemp(path.join(tmpdir(), 'loudness-meter-'));
  try {
    const meta = path.join(dir, 'meta.txt');
    const r = await run('ffmpeg', [
      '-nostdin', '-hide_banner', '-nostats', '-i', file,
      '-af', `ebur128=peak=true:metadata=1,ametadata=mode=print:key=lavfi.r128.I:file=${meta}`,
      '-f', 'null', '-',
    ]);
    if (r.code !== 0) throw new Error(`ffmpeg ebur128 failed (${String(r.code)}): ${r.stderr.slice(-2000)}`);
    const summary = parseEbur128Summary(r.stderr);
    let precise: number | undefined;
    try {
      const values = [...(await readFile(meta, 'utf8')).matchAll(/^lavfi\.r128\.I=(-?[\d.]+|-?inf)$/gm)];
      const last = values.at(-1)?.[1];
      if (last !== undefined && Number.isFinite(Number(last))) precise = Number(last);
    } catch {
      // no metadata file: the Summary value is used
    }
    // the metadata value and the Summary must agree (the Summary is rounded to 0.1)
    if (precise !== undefined && Math.abs(precise - summary.integratedLufs) > 0.06) precise = undefined;
    return {
      integratedLufs: precise ?? summary.integratedLufs,
      summaryIntegratedLufs: summary.integratedLufs,
      lraLu: summary.lraLu,
      truePeakDbtp: summary.truePeakDbtp ?? Number.NaN,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A WAVE_FORMAT_IEEE_FLOAT (32-bit) file image of interleaved samples. */
export function float32Wav(interleaved: Float32Array, channels: number, rate: number): Buffer {
  const dataBytes = interleaved.length * 4;
  const header = wavHeader({ format: 'float', channels, rate, bitsPerSample: 32, dataBytes });
  const data = Buffer.alloc(dataBytes);
  for (let i = 0; i < interleaved.length; i++) data.writeFloatLE(interleaved[i] ?? 0, i * 4);
  return Buffer.concat([header, data]);
}

export interface MeasureSamplesOptions {
  channels?: number;
  rate?: number;
  /** Keep the WAV file at this path (else it is written to a temp dir and removed). */
  keepAs?: string;
}

/** Writes interleaved float samples (default stereo 48 kHz) to a WAV file and measures it. */
export async function measureSamples(interleaved: Float32Array, options: MeasureSamplesOptions = {}): Promise<LoudnessMeasure> {
  const channels = options.channels ?? 2;
  const rate = options.rate ?? 48000;
  if (interleaved.length < channels * rate * 0.4) {
    throw new Error(`too little audio to measure: ${interleaved.length / channels} frames`);
  }
  const image = float32Wav(interleaved, channels, rate);
  if (options.keepAs !== undefined) {
    await writeFile(options.keepAs, image);
    return measureFile(options.keepAs);
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'loudness-wav-'));
  try {
    const file = path.join(dir, 'received.wav');
    await writeFile(file, image);
    return await measureFile(file);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
