/**
 * The fallback file's decoded copy (src/pipelines/fallback-cache.ts), made by real gst-launch-1.0
 * children from real files ffmpeg makes: FLAC and WAV at 44.1, 48 and 96 kHz, mono and stereo.
 * The copy holds exactly round(frames x 48000 / rate) frames, frames counted by ffmpeg's own
 * decode of the file; every frame of a tone's copy, its first and last too, is that tone (fitted:
 * its amplitude, audioresample's constant delay of 1/8 input frame); and a tone that is a whole
 * number of periods long loops from its copy as seamlessly as the tone itself: the step from the
 * copy's last sample to its first is within the tone's own largest step plus twice the copy's
 * largest error against the fitted tone. Nothing but the copy is left in the state dir.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { gstEnvironment } from '../../src/gst/environment.js';
import { FallbackCache } from '../../src/pipelines/fallback-cache.js';
import { newPipelineId } from '../../src/store/ids.js';

const RATE = 48000;
const root = t.testdir();
const fallbackDir = path.join(root, 'fallback');
const cacheDir = path.join(root, 'state', 'fallback');
mkdirSync(fallbackDir);
const cache = new FallbackCache({ fallbackDir, cacheDir, env: gstEnvironment(path.join(root, 'state'), process.env).env });

interface Tone {
  frequency: number;
  amplitude: number;
}

/** A sine file made by ffmpeg (aevalsrc, 16-bit): `frames` frames at `rate`, every channel the same tone. */
function toneFile(name: string, options: Tone & { rate: number; frames: number; channels: number; codec: 'flac' | 'wav' }): string {
  const expr = `${options.amplitude}*sin(2*PI*${options.frequency}*t)`;
  const file = path.join(fallbackDir, `${name}.${options.codec}`);
  execFileSync('ffmpeg', [
    '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi',
    '-i', `aevalsrc=${Array(options.channels).fill(expr).join('|')}:s=${options.rate}:d=${options.frames / options.rate}`,
    '-af', `atrim=end_sample=${options.frames}`, '-c:a', options.codec === 'flac' ? 'flac' : 'pcm_s16le', file,
  ]);
  return file;
}

/** The file's frames as ffmpeg decodes it (not the code under test). */
function framesOf(file: string, channels: number): number {
  const raw = execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-i', file, '-f', 'f32le', '-'], { maxBuffer: 256 * 1024 * 1024 });
  return raw.length / (channels * 4);
}

/** Channel `channel` of an interleaved F32LE copy. */
function channelOf(copy: string, channels: number, channel = 0): Float32Array {
  const bytes = readFileSync(copy);
  const all = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
  return all.filter((_, i) => i % channels === channel);
}

/**
 * The sine at `frequency` that fits `samples` best (least squares of a sin + b cos): its amplitude,
 * how many frames it leads a sine that starts at frame 0 (negative: lags), and the largest
 * distance of any sample from it.
 */
function fitTone(samples: Float32Array, frequency: number): { amplitude: number; lead: number; error: number } {
  const w = (2 * Math.PI * frequency) / RATE;
  let [ss, cc, sc, xs, xc] = [0, 0, 0, 0, 0];
  samples.forEach((x, k) => {
    const [s, c] = [Math.sin(w * k), Math.cos(w * k)];
    [ss, cc, sc, xs, xc] = [ss + s * s, cc + c * c, sc + s * c, xs + x * s, xc + x * c];
  });
  const det = ss * cc - sc * sc;
  const a = (xs * cc - xc * sc) / det;
  const b = (xc * ss - xs * sc) / det;
  let error = 0;
  samples.forEach((x, k) => {
    error = Math.max(error, Math.abs(x - a * Math.sin(w * k) - b * Math.cos(w * k)));
  });
  return { amplitude: Math.hypot(a, b), lead: Math.atan2(b, a) / w, error };
}

void t.test('the copy holds exactly round(frames x 48000 / rate) frames', async (t) => {
  // 1.5 s + 7 frames: at 44.1 kHz 72007.6 output frames, so the rounding is seen too.
  for (const rate of [44100, 48000, 96000]) {
    for (const codec of ['flac', 'wav'] as const) {
      for (const channels of [1, 2]) {
        const frames = rate * 1.5 + 7;
        const file = toneFile(`count-${rate}-${codec}-${channels}`, { frequency: 440, amplitude: 0.5, rate, frames, channels, codec });
        const framesIn = framesOf(file, channels);
        t.equal(framesIn, frames, `ffmpeg made ${frames} frames (${rate} Hz ${codec}, ${channels} ch)`);
        const copy = await cache.prepare(newPipelineId(), { type: 'file', path: file, loop: true }, channels);
        const expected = Math.round((framesIn * RATE) / rate);
        t.equal(readFileSync(copy).length, expected * channels * 4, `${rate} Hz ${codec}, ${channels} ch: ${expected} frames`);
      }
    }
  }
  t.same(readdirSync(cacheDir).filter((entry) => !entry.endsWith('.f32')), [], 'no partial file left');
});

void t.test('a tone of whole periods: every frame is the tone, and it loops without a step above its own', async (t) => {
  // The e2e test's fallback (test/e2e/failover-fallback.test.ts): 330 Hz at -18 dBFS, 1.5 s = 495 periods.
  const tone: Tone = { frequency: 330, amplitude: 10 ** (-18 / 20) };
  /** A sampled sine's largest step between neighbours: 2 A sin(pi f / rate). */
  const ownStep = 2 * tone.amplitude * Math.sin((Math.PI * tone.frequency) / RATE);
  for (const [rate, channels] of [[44100, 2], [96000, 1], [32000, 1], [48000, 2]] as const) {
    const file = toneFile(`loop-${rate}-${channels}`, { ...tone, rate, frames: rate * 1.5, channels, codec: 'flac' });
    const copy = await cache.prepare(newPipelineId(), { type: 'file', path: file, loop: true }, channels);
    for (let channel = 0; channel < channels; channel++) {
      const samples = channelOf(copy, channels, channel);
      t.equal(samples.length, RATE * 1.5, `${rate} Hz: 1.5 s`);
      const fit = fitTone(samples, tone.frequency);
      t.ok(Math.abs(fit.amplitude / tone.amplitude - 1) < 0.001, `${rate} Hz ch ${channel}: the tone's amplitude (${(fit.amplitude / tone.amplitude).toFixed(6)} of it)`);
      // audioresample delays its output by 1/8 of an input frame (its filter table's 8 phases), at any rate; 0 without resampling.
      t.ok(Math.abs(fit.lead - (rate === RATE ? 0 : -RATE / rate / 8)) < 0.01, `${rate} Hz ch ${channel}: delayed by ${(-fit.lead).toFixed(4)} frames, audioresample's 1/8 input frame`);
      t.ok(fit.error < tone.amplitude / 1000, `${rate} Hz ch ${channel}: every frame, the first and last too, is that tone (largest error ${fit.error.toExponential(2)}, under -60 dB of it)`);
      const join = Math.abs((samples[0] ?? 0) - (samples[samples.length - 1] ?? 0));
      t.ok(join <= ownStep + 2 * fit.error, `${rate} Hz ch ${channel}: the step at the loop point ${join.toFixed(6)} is at most the tone's own ${ownStep.toFixed(6)} + twice the error`);
      t.comment(`${rate} Hz ch ${channel}: loop-point step ${join.toFixed(5)}, the tone's own ${ownStep.toFixed(5)}, largest error ${fit.error.toExponential(2)}`);
    }
  }
});

void t.test('a source shorter than the resampler\'s padding loops on itself there too', async (t) => {
  // 0.1 s (the shortest taken) at a rate whose common period with 48 kHz is a whole second of it.
  const rate = 44101;
  const tone: Tone = { frequency: 441, amplitude: 0.25 };
  const frames = Math.ceil(rate * 0.1) + 1;
  const file = toneFile('short-44101', { ...tone, rate, frames, channels: 1, codec: 'wav' });
  const copy = await cache.prepare(newPipelineId(), { type: 'file', path: file, loop: true }, 1);
  t.equal(readFileSync(copy).length, Math.round((frames * RATE) / rate) * 4, 'exactly round(frames x 48000 / rate) frames');
});

void t.test('refused: the checks name fallback.path, and no decoded or partial file is left', async (t) => {
  const before = readdirSync(cacheDir);
  const corrupt = path.join(fallbackDir, 'corrupt.flac');
  writeFileSync(corrupt, randomBytes(64 * 1024));
  const short = toneFile('short', { frequency: 440, amplitude: 0.5, rate: 44100, frames: 2205, channels: 1, codec: 'flac' });
  for (const [file, message] of [[corrupt, 'could not be decoded as audio'], [short, 'holds no audio (0.05 s, at least 0.1 s)']] as const) {
    await t.rejects(cache.prepare(newPipelineId(), { type: 'file', path: file, loop: true }, 2), { code: 'VALIDATION_FAILED', path: ['fallback', 'path'], message: `fallback.path ${file} ${message}` });
  }
  t.same(readdirSync(cacheDir), before, 'nothing left in the state dir');
});
