/**
 * Encoded sine files for source clients that play files (ezstream, ices2, curl): MP3 (ffmpeg,
 * libmp3lame) and Ogg Vorbis (oggenc, so each file is its own chain), each with a title tag.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

export interface SineFile {
  file: string;
  title: string;
  amplitude: number;
}

/** A stereo 48 kHz sine of `seconds`, `amplitude` (peak, 0-1), encoded as `codec` into `dir`. */
export function sineFile(dir: string, name: string, options: { codec: 'mp3' | 'ogg'; seconds: number; amplitude: number; frequency?: number; title?: string }): SineFile {
  const f = options.frequency ?? 1000;
  const expr = `${options.amplitude}*sin(2*PI*${f}*t)`;
  const title = options.title ?? name;
  const wav = path.join(dir, `${name}.wav`);
  execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', `aevalsrc=${expr}|${expr}:s=48000:d=${options.seconds}`, '-c:a', 'pcm_s16le', wav]);
  const file = path.join(dir, `${name}.${options.codec}`);
  if (options.codec === 'mp3') {
    execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-i', wav, '-c:a', 'libmp3lame', '-b:a', '192k', '-metadata', `title=${title}`, file]);
  } else {
    execFileSync('oggenc', ['-Q', '-q', '6', '-t', title, '-o', file, wav]);
  }
  return { file, title, amplitude: options.amplitude };
}
