/**
 * A pipeline's fallback file (docs/failover.md): the user's audio file, checked and decoded once
 * when the spec is created or changed, into the raw form the clock bridge maps and loops
 * (`fallback-file`: F32LE interleaved, 48 kHz, the output's channels) in the engine's state dir.
 *
 * The checks, each a ValidationError naming `fallback.path`: the path is absolute and normalised
 * (the validator), its real path (symlinks resolved) lies inside `[engine] fallback_dir`, it is a
 * regular file of at most MAX_SOURCE_BYTES, a real `gst-launch-1.0` child decodes it (reading it
 * on its stdin, so the user's path never reaches an argv), and it holds between MIN_SECONDS and
 * MAX_SECONDS of audio. Nothing is left behind when a check fails.
 *
 * Exact length, seamless loop: a source of `n` frames at `rate` gives a copy of exactly
 * round(n x 48000 / rate) frames, and a source that loops seamlessly loops as seamlessly from its
 * copy. audioresample alone cannot: at end of stream it drains output frames up to the last input
 * frame's time only, so the frames that lie between the last input frame and the loop's next first
 * one are never made (66150 frames at 44.1 kHz gave 71999, not 72000, and a skipped sample at the
 * loop point). So the source is decoded at its own rate first (`<copy>.in.part`), then resampled
 * looped on itself: a few ms of its own end before it and of its start after it (the filter's reach;
 * a whole number of the rates' common period, so that the source's first frame falls on an output
 * frame), and only the output frames of the source itself are kept. A fallback always loops
 * (`loop` is true), so this is the file as it plays. A source at 48 kHz is not resampled.
 *
 * Each decoded copy is `<state>/fallback/<pipeline id>-<digest of path and channels>.f32`, named
 * from the spec alone: a change writes a new one while the running child still maps the old, which
 * goes once the new record is stored. (A file replaced on disk under the same path is decoded
 * again when a change names the fallback again, or at a start that finds no copy.)
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readdir, realpath, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ValidationError } from '../errors.js';
import { runCommand, runFilter } from '../process/child.js';
import type { FallbackFile } from '../spec/schema.js';
import { PIPELINE_ID } from '../store/ids.js';

/** The longest fallback the engine keeps: 10 minutes (a loop of station idents, not a programme). */
export const MAX_SECONDS = 600;
/** The element's own minimum (docs/elements-clockbridge.md). */
export const MIN_SECONDS = 0.1;
/** A bigger source file is refused before decoding (a 10-minute 8-channel 96 kHz 32-bit WAV is 737 MB). */
export const MAX_SOURCE_BYTES = 1024 * 1024 * 1024;
/** How long the decoder may take. */
export const DECODE_TIMEOUT_MS = 60_000;

const BYTES_PER_SAMPLE = 4;
const RATE = 48_000;
/** The only characters a decoded copy's path may hold (it is a `location=` in the decoder's argv). */
const SAFE_PATH = /^\/[A-Za-z0-9_.+/-]{1,1023}$/;
const CACHE_NAME = /^(pl_[0-9A-Za-z]{12,64})-([0-9a-f]{16})\.f32$/;
/** The source decoded at its own rate, before resampling: `<copy>.in.part`. */
const DECODED_SUFFIX = '.in.part';
/** What the decoder's `-v` prints for the capsfilter named `native`: the source's own rate. */
const NATIVE_CAPS = /^\/GstPipeline:pipeline\d+\/GstCapsFilter:native\.GstPad:src: caps = audio\/x-raw, [^\n]*\brate=\(int\)([0-9]+)/gm;
/** The highest source rate taken (768 kHz: above any audio file's). */
const MAX_RATE = 768_000;
/** Frames of the source's own end and start put around it for the resampler: its filter's reach, and more. */
const MIN_PAD_SECONDS = 0.02;

interface Decoded {
  rate: number;
  frames: number;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

/**
 * How many frames of the source go before and after it for the resampler: at least
 * MIN_PAD_SECONDS, and a whole number of the two rates' common period (rate / gcd(rate, RATE)
 * source frames are exactly RATE / gcd output frames), so that the source's first frame is an
 * output frame.
 */
function padFrames(rate: number): number {
  const period = rate / gcd(rate, RATE);
  return Math.ceil((MIN_PAD_SECONDS * rate) / period) * period;
}

/** The first and last min(pad, frames) frames of the decoded source, to loop it on itself. */
async function readEnds(file: string, frames: number, pad: number, bytesPerFrame: number): Promise<{ looped(from: number, count: number): Buffer }> {
  const count = Math.min(pad, frames);
  const handle = await open(file, 'r');
  const first = Buffer.alloc(count * bytesPerFrame);
  const last = Buffer.alloc(count * bytesPerFrame);
  try {
    await handle.read(first, 0, first.length, 0);
    await handle.read(last, 0, last.length, (frames - count) * bytesPerFrame);
  } finally {
    await handle.close();
  }
  return {
    /** `count` frames of the source looped for ever both ways, from frame `from` (negative: before its start). */
    looped(from: number, n: number): Buffer {
      const out = Buffer.alloc(n * bytesPerFrame);
      for (let i = 0; i < n; i++) {
        const k = (((from + i) % frames) + frames) % frames;
        // k < count: in the first frames; else (only when pad < frames) within the last.
        if (k < count) first.copy(out, i * bytesPerFrame, k * bytesPerFrame, (k + 1) * bytesPerFrame);
        else last.copy(out, i * bytesPerFrame, (k - (frames - count)) * bytesPerFrame, (k - (frames - count) + 1) * bytesPerFrame);
      }
      return out;
    },
  };
}

/** Passes bytes [skip, skip + keep) of a stream and drops the rest; `onKept` counts what passed. */
function byteWindow(skip: number, keep: number, onKept: (bytes: number) => void): Transform {
  let at = 0;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const from = Math.max(skip - at, 0);
      const to = Math.min(skip + keep - at, chunk.length);
      at += chunk.length;
      if (to > from) {
        onKept(to - from);
        done(null, chunk.subarray(from, to));
      } else {
        done();
      }
    },
  });
}

export interface FallbackCacheOptions {
  /** `[engine] fallback_dir`, resolved. */
  fallbackDir: string;
  /** Where the decoded copies live (`<state_dir>/fallback`). */
  cacheDir: string;
  /** The environment of GStreamer children. */
  env: Readonly<Record<string, string>>;
  timeoutMs?: number;
}

export class FallbackCache {
  constructor(private readonly options: FallbackCacheOptions) {}

  /** The decoded copy of pipeline `id`'s fallback at `channels` (what the compiler passes as `fallback-file`). */
  fileOf(id: string, fallback: FallbackFile, channels: number): string {
    if (!PIPELINE_ID.test(id)) throw new Error(`not a pipeline id: ${id}`);
    const digest = createHash('sha256').update(JSON.stringify([fallback.path, channels])).digest('hex').slice(0, 16);
    return path.join(this.options.cacheDir, `${id}-${digest}.f32`);
  }

  /** Whether the decoded copy exists (a start after the state dir lost it decodes again). */
  async has(file: string): Promise<boolean> {
    return stat(file).then((info) => info.isFile(), () => false);
  }

  /**
   * Checks and decodes `fallback` for pipeline `id` at `channels` channels; resolves with the
   * decoded copy's path (fileOf). `field` names the path in errors.
   */
  async prepare(id: string, fallback: FallbackFile, channels: number, field = 'fallback.path'): Promise<string> {
    const source = await this.check(fallback.path, field);
    const target = this.fileOf(id, fallback, channels);
    if (!SAFE_PATH.test(`${target}${DECODED_SUFFIX}`)) throw new Error(`the state directory's path ${JSON.stringify(this.options.cacheDir)} has characters a GStreamer description cannot carry`);
    await mkdir(this.options.cacheDir, { recursive: true, mode: 0o700 });
    const partial = `${target}.part`;
    const decoded = `${target}${DECODED_SUFFIX}`;
    const refuse = (why: string): never => {
      throw new ValidationError(`${field} ${fallback.path} ${why}`, ['fallback', 'path']);
    };
    try {
      const native = await this.decode(source, decoded, channels, refuse);
      const frames = Math.round((native.frames * RATE) / native.rate);
      const seconds = frames / RATE;
      if (seconds < MIN_SECONDS) refuse(`holds no audio (${seconds.toFixed(2)} s, at least ${MIN_SECONDS} s)`);
      if (seconds > MAX_SECONDS) refuse(`is longer than ${MAX_SECONDS / 60} minutes (${Math.round(seconds)} s)`);
      if (native.rate === RATE) await rename(decoded, partial);
      else await this.resample(decoded, native, channels, frames, partial);
      await rename(partial, target);
      return target;
    } finally {
      await unlink(partial).catch(() => undefined);
      await unlink(decoded).catch(() => undefined);
    }
  }

  /**
   * Decodes `source` (on the child's stdin) at its own rate into `decoded`: F32LE, `channels`
   * channels. The rate is the one `-v` prints for the capsfilter named `native`.
   */
  private async decode(source: string, decoded: string, channels: number, refuse: (why: string) => never): Promise<Decoded> {
    const result = await runCommand(
      'gst-launch-1.0',
      [
        '-v', 'fdsrc', 'fd=0', '!', 'decodebin', '!', 'audioconvert', '!',
        'capsfilter', 'name=native', `caps=audio/x-raw,format=F32LE,layout=interleaved,channels=${channels}`, '!', 'filesink', `location=${decoded}`,
      ],
      this.options.env,
      this.options.timeoutMs ?? DECODE_TIMEOUT_MS,
      { stdinFile: source },
    );
    if (result.exitCode !== 0) refuse('could not be decoded as audio');
    const rates = new Set([...result.stdout.matchAll(NATIVE_CAPS)].map((match) => Number(match[1])));
    if (rates.size === 0) refuse('could not be decoded as audio');
    if (rates.size > 1) refuse(`changes its sample rate (${[...rates].join(', ')} Hz): one rate, please`);
    const [rate = 0] = rates;
    if (!Number.isSafeInteger(rate) || rate < 1 || rate > MAX_RATE) refuse(`has a sample rate of ${rate} Hz (at most ${MAX_RATE})`);
    const bytes = (await stat(decoded)).size;
    const bytesPerFrame = channels * BYTES_PER_SAMPLE;
    if (bytes % bytesPerFrame !== 0) throw new Error(`the decoder wrote ${bytes} bytes, not whole frames of ${bytesPerFrame}`);
    return { rate, frames: bytes / bytesPerFrame };
  }

  /**
   * Resamples `decoded` to RATE into `partial`: exactly `frames` frames, the source looped on
   * itself (the header's "Exact length, seamless loop"). The resampler reads, on its stdin, `pad`
   * frames of the source's end, the source, then `pad` frames of its start; of its output the
   * first pad x RATE / rate frames (the end before the start) are dropped, then `frames` kept.
   */
  private async resample(decoded: string, native: Decoded, channels: number, frames: number, partial: string): Promise<void> {
    const bytesPerFrame = channels * BYTES_PER_SAMPLE;
    const pad = padFrames(native.rate);
    const ends = await readEnds(decoded, native.frames, pad, bytesPerFrame);
    const input = async function* (): AsyncGenerator<Uint8Array> {
      yield ends.looped(-pad, pad);
      yield* createReadStream(decoded, { highWaterMark: 1024 * 1024 });
      yield ends.looped(native.frames, pad);
    };
    const skip = ((pad * RATE) / native.rate) * bytesPerFrame;
    const keep = frames * bytesPerFrame;
    let kept = 0;
    const result = await runFilter(
      'gst-launch-1.0',
      [
        '-q', 'fdsrc', 'fd=0', '!', 'rawaudioparse', 'use-sink-caps=false', 'format=pcm', 'pcm-format=f32le', `sample-rate=${native.rate}`, `num-channels=${channels}`, '!',
        'audioresample', '!', `audio/x-raw,format=F32LE,layout=interleaved,rate=${RATE},channels=${channels}`, '!', 'fdsink', 'fd=1',
      ],
      this.options.env,
      this.options.timeoutMs ?? DECODE_TIMEOUT_MS,
      input(),
      (stdout) => pipeline(stdout, byteWindow(skip, keep, (n) => (kept += n)), createWriteStream(partial)),
    );
    if (result.exitCode !== 0) throw new Error(`resampling the decoded fallback failed (exit ${String(result.exitCode)}): ${result.stderr.slice(-500)}`);
    if (kept !== keep) throw new Error(`the resampler gave ${kept / bytesPerFrame} of the ${frames} frames the copy holds`);
  }

  /** Removes pipeline `id`'s decoded copies, all but `keep` (a path from prepare()). */
  async removeAll(id: string, keep?: string): Promise<void> {
    let entries: string[];
    try {
      entries = await readdir(this.options.cacheDir);
    } catch {
      return;
    }
    for (const entry of entries) {
      const match = CACHE_NAME.exec(entry.replace(/(\.in)?\.part$/, ''));
      const file = path.join(this.options.cacheDir, entry);
      if (match?.[1] === id && file !== keep) await unlink(file).catch(() => undefined);
    }
  }

  /** The real path of a user's file inside fallback_dir, a regular file not too big; else a ValidationError. */
  private async check(file: string, field: string): Promise<string> {
    const refuse = (why: string): never => {
      throw new ValidationError(`${field} ${file} ${why}`, ['fallback', 'path']);
    };
    let dir: string;
    try {
      dir = await realpath(this.options.fallbackDir);
    } catch {
      return refuse(`cannot be used: the fallback directory ${this.options.fallbackDir} ([engine] fallback_dir) does not exist`);
    }
    let real: string;
    try {
      real = await realpath(file);
    } catch {
      return refuse('does not exist');
    }
    if (!real.startsWith(`${dir}${path.sep}`)) refuse(`is outside the fallback directory ${this.options.fallbackDir} ([engine] fallback_dir)`);
    const info = await stat(real);
    if (!info.isFile()) refuse('is not a regular file');
    if (info.size > MAX_SOURCE_BYTES) refuse(`is larger than ${MAX_SOURCE_BYTES / 1024 / 1024} MiB`);
    return real;
  }
}
