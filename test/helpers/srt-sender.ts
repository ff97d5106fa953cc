/**
 * A real SRT caller: ffmpeg encodes a generated stereo sine into MPEG-TS and sends it to a
 * pipeline's SRT listener on 127.0.0.1. It retries the connection until the listener is up.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface SenderOptions {
  port: number;
  /** Peak amplitude of the sine, 0..1 (RMS = peak / sqrt 2). */
  amplitude: number;
  frequency?: number;
  /** Amplitude modulation: the level swings by `depth` (0..1) at `hz`, so loudness meters move. */
  modulation?: { depth: number; hz: number };
  seconds: number;
  /** ffmpeg audio codec: aac (default), mp2, s302m. */
  codec?: 'aac' | 'mp2' | 's302m';
  /** Also a small MPEG-2 video stream, written before the audio in the transport stream. */
  video?: boolean;
  /** SRT encryption of the caller (ffmpeg 5.1 sends the query text as it is: no %XX). */
  passphrase?: string;
  pbkeylen?: 16 | 24 | 32;
  /** Runs ffmpeg through this command, e.g. `['nsenter', '--target', pid, '--net', '--']`: another network namespace. */
  via?: readonly string[];
  /** Send from inside this network namespace (to its 127.0.0.1, or to `host`). */
  netns?: string;
  /** The listener's IPv4 address; default 127.0.0.1. */
  host?: string;
  /** Read the input at this multiple of real time (ffmpeg -readrate): 1.001 = a sender clock 1000 ppm fast. Default -re (1). */
  readrate?: number;
  /** SRT latency the caller asks for, ms (the connection uses the larger of both sides). Default 300. */
  latencyMs?: number;
  /** An aevalsrc expression of `t` for both channels instead of the sine (amplitude and frequency then unused). */
  expression?: string;
  /** MPEG-TS PES payload size, bytes (ffmpeg -pes_payload_size; its default 2930 packs ~85 ms of AAC at 256 kb/s). */
  pesPayloadSize?: number;
}

export interface Sender {
  process: ChildProcess;
  /** Resolves with the exit code when ffmpeg ends. */
  done: Promise<number | null>;
  stop(): void;
}

function encryption(options: SenderOptions): string {
  const passphrase = options.passphrase === undefined ? '' : `&passphrase=${options.passphrase}`;
  return options.pbkeylen === undefined ? passphrase : `${passphrase}&pbkeylen=${options.pbkeylen}`;
}

export function sendSine(options: SenderOptions): Sender {
  const f = options.frequency ?? 1000;
  const a = options.amplitude;
  const m = options.modulation;
  const sine = m === undefined ? `${a}*sin(2*PI*${f}*t)` : `${a}*(1+${m.depth}*sin(2*PI*${m.hz}*t))*sin(2*PI*${f}*t)`;
  const expr = options.expression ?? sine;
  const codec = options.codec ?? 'aac';
  const codecArgs =
    codec === 'aac' ? ['-c:a', 'aac', '-b:a', '256k']
    : codec === 'mp2' ? ['-c:a', 'mp2', '-b:a', '384k']
    : ['-c:a', 's302m', '-strict', '-2'];
  const video = options.video === true
    ? ['-f', 'lavfi', '-i', `testsrc=size=160x120:rate=25:duration=${options.seconds}`]
    : [];
  const args = [
    '-hide_banner', '-loglevel', 'error', '-nostdin',
    ...(options.readrate === undefined ? ['-re'] : ['-readrate', String(options.readrate)]),
    ...video,
    '-f', 'lavfi', '-i', `aevalsrc=${expr}|${expr}:s=48000:d=${options.seconds}`,
    ...(options.video === true ? ['-map', '0:v', '-map', '1:a', '-c:v', 'mpeg2video', '-b:v', '200k'] : []),
    ...codecArgs,
    ...(options.pesPayloadSize === undefined ? [] : ['-pes_payload_size', String(options.pesPayloadSize)]),
    '-f', 'mpegts', `srt://${options.host ?? '127.0.0.1'}:${options.port}?mode=caller&latency=${(options.latencyMs ?? 300) * 1000}&connect_timeout=3000${encryption(options)}`,
  ];
  const prefix = options.netns === undefined ? [...(options.via ?? [])] : ['ip', 'netns', 'exec', options.netns];
  const [file, ...rest] = [...prefix, 'ffmpeg', ...args];
  const child = spawn(file ?? 'ffmpeg', rest, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const done = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => {
      if (code !== 0 && stderr !== '') process.stderr.write(`ffmpeg sender: ${stderr}`);
      resolve(code);
    });
  });
  return {
    process: child,
    done,
    stop(): void {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}
