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
 * Each decoded copy is `<state>/fallback/<pipeline id>-<digest of path and channels>.f32`, named
 * from the spec alone: a change writes a new one while the running child still maps the old, which
 * goes once the new record is stored. (A file replaced on disk under the same path is decoded
 * again when a change names the fallback again, or at a start that finds no copy.)
 */
import { createHash } from 'node:crypto';
import { mkdir, readdir, realpath, rename, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { ValidationError } from '../errors.js';
import { runCommand } from '../process/child.js';
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
    if (!SAFE_PATH.test(target)) throw new Error(`the state directory's path ${JSON.stringify(this.options.cacheDir)} has characters a GStreamer description cannot carry`);
    await mkdir(this.options.cacheDir, { recursive: true, mode: 0o700 });
    const partial = `${target}.part`;
    try {
      const result = await runCommand(
        'gst-launch-1.0',
        [
          '-q', 'fdsrc', 'fd=0', '!', 'decodebin', '!', 'audioconvert', '!', 'audioresample', '!',
          `audio/x-raw,format=F32LE,layout=interleaved,rate=${RATE},channels=${channels}`, '!', 'filesink', `location=${partial}`,
        ],
        this.options.env,
        this.options.timeoutMs ?? DECODE_TIMEOUT_MS,
        { stdinFile: source },
      );
      if (result.exitCode !== 0) {
        throw new ValidationError(`${field} ${fallback.path} could not be decoded as audio`, ['fallback', 'path']);
      }
      const seconds = (await stat(partial)).size / (RATE * channels * BYTES_PER_SAMPLE);
      if (seconds < MIN_SECONDS) throw new ValidationError(`${field} ${fallback.path} holds no audio (${seconds.toFixed(2)} s, at least ${MIN_SECONDS} s)`, ['fallback', 'path']);
      if (seconds > MAX_SECONDS) throw new ValidationError(`${field} ${fallback.path} is longer than ${MAX_SECONDS / 60} minutes (${Math.round(seconds)} s)`, ['fallback', 'path']);
      await rename(partial, target);
      return target;
    } finally {
      await unlink(partial).catch(() => undefined);
    }
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
      const match = CACHE_NAME.exec(entry.replace(/\.part$/, ''));
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
