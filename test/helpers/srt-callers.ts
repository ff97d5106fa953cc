/**
 * The three SRT callers of the caller-return tests (issue 51), each sending a stereo sine as AAC
 * in MPEG-TS with the audio on PID 256 (ffmpeg's layout: the listener's tsdemux follows a new
 * caller of the same layout):
 *
 * - `ffmpeg`: ffmpeg's own SRT output (it calls once; an I/O error ends it);
 * - `srt-live-transmit`: ffmpeg writes the stream to a pipe, srt-live-transmit calls and sends it;
 * - `srtsink`: a gst-launch-1.0 pipeline, audiotestsrc -> avenc_aac -> mpegtsmux -> srtsink.
 *
 * stop() kills every process of the caller with SIGKILL: no SRT shutdown reaches the listener,
 * as with a crashed encoder or a pulled cable.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { sendSine } from './srt-sender.js';

export type CallerKind = 'ffmpeg' | 'srt-live-transmit' | 'srtsink';
export const CALLER_KINDS: readonly CallerKind[] = ['ffmpeg', 'srt-live-transmit', 'srtsink'];

export interface CallerOptions {
  /** The listener (or a relay in front of it) on 127.0.0.1, or on `host`. */
  port: number;
  host?: string;
  frequency: number;
  /** Peak amplitude, 0..1. */
  amplitude: number;
  latencyMs: number;
  /** Run inside this network namespace (`ip netns exec`). */
  netns?: string;
  seconds?: number;
}

export interface Caller {
  kind: CallerKind;
  processes: ChildProcess[];
  stop(): void;
}

function prefixed(options: CallerOptions, command: string, args: string[]): ChildProcess {
  const [file, ...rest] = options.netns === undefined ? [command, ...args] : ['ip', 'netns', 'exec', options.netns, command, ...args];
  return spawn(file ?? command, rest, { stdio: ['pipe', 'pipe', 'ignore'] });
}

function killAll(processes: readonly ChildProcess[]): void {
  for (const p of processes) {
    if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  }
}

export function startCaller(kind: CallerKind, options: CallerOptions): Caller {
  const host = options.host ?? '127.0.0.1';
  const seconds = options.seconds ?? 600;
  const { frequency: f, amplitude: a } = options;
  if (kind === 'ffmpeg') {
    if (host !== '127.0.0.1') throw new Error('the ffmpeg caller sends to 127.0.0.1 (of its namespace)');
    const s = sendSine({ port: options.port, amplitude: a, frequency: f, seconds, latencyMs: options.latencyMs, codec: 'aac', netns: options.netns });
    return { kind, processes: [s.process], stop: () => s.stop() };
  }
  if (kind === 'srt-live-transmit') {
    const expr = `${a}*sin(2*PI*${f}*t)`;
    const encoder = prefixed(options, 'ffmpeg', [
      '-hide_banner', '-loglevel', 'error', '-nostdin', '-re', '-f', 'lavfi', '-i', `aevalsrc=${expr}|${expr}:s=48000:d=${seconds}`,
      '-c:a', 'aac', '-b:a', '256k', '-flush_packets', '1', '-f', 'mpegts', '-',
    ]);
    const transmit = prefixed(options, 'srt-live-transmit', ['-q', '-chunk:1316', 'file://con', `srt://${host}:${options.port}?latency=${options.latencyMs}`]);
    encoder.stdout?.pipe(transmit.stdin as NodeJS.WritableStream);
    // a killed transmitter closes the pipe: the encoder must not die of EPIPE noise before its own kill
    transmit.stdin?.on('error', () => undefined);
    encoder.stdout?.on('error', () => undefined);
    const processes = [transmit, encoder];
    return { kind, processes, stop: () => killAll(processes) };
  }
  // GStreamer's audiotestsrc: a sine of `volume` peak amplitude
  const gst = prefixed(options, 'gst-launch-1.0', [
    '-q', 'audiotestsrc', 'is-live=true', `freq=${f}`, `volume=${a}`, '!', 'audio/x-raw,rate=48000,channels=2', '!',
    'audioconvert', '!', 'avenc_aac', 'bitrate=256000', '!', 'aacparse', '!', 'mux.sink_256', 'mpegtsmux', 'name=mux', '!',
    'srtsink', `uri=srt://${host}:${options.port}?mode=caller`, `latency=${options.latencyMs}`,
  ]);
  return { kind, processes: [gst], stop: () => killAll([gst]) };
}
