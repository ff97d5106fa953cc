/**
 * ffmpeg as an HTTP PUT source with a chunked body (`-method PUT -chunked_post 1`, the http
 * protocol; ffmpeg's icecast:// protocol always turns chunked_post off): a sine encoded to MP3
 * in real time.
 */
import type { Test } from 'tap';
import { runClient, type ClientProcess } from './client-process.js';

export interface FfmpegChunkedOptions {
  port: number;
  password: string;
  mount: string;
  amplitude: number;
  seconds: number;
}

export function runFfmpegChunked(t: Test, o: FfmpegChunkedOptions): ClientProcess {
  const expr = `${o.amplitude}*sin(2*PI*1000*t)`;
  const args = [
    '-hide_banner', '-loglevel', 'error', '-nostdin', '-re', '-f', 'lavfi', '-i', `aevalsrc=${expr}|${expr}:s=48000:d=${o.seconds}`,
    '-c:a', 'libmp3lame', '-b:a', '192k', '-f', 'mp3', '-content_type', 'audio/mpeg',
    '-method', 'PUT', '-chunked_post', '1', '-auth_type', 'basic', `http://source:${o.password}@127.0.0.1:${o.port}${o.mount}`,
  ];
  return runClient(t, 'ffmpeg', args, { timeoutMs: (o.seconds + 15) * 1000 });
}
