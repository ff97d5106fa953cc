/**
 * Station helpers: a station number whose harbor port (8100 + N - 1) is free right now on UDP and
 * TCP, the engine's dashboard address, a station as its API shows it (and waiting for a state of
 * it), station TOML, an Icecast source client (ffmpeg) and the processes of a station's child.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { readdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import type { StationView } from '../../src/stations/station.js';
import { api, eventually, type EngineProcess } from './engine-process.js';

const handedOut = new Set<number>();

function udpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createSocket('udp4');
    socket.once('error', () => resolve(false));
    socket.bind({ port, address: '0.0.0.0', exclusive: true }, () => socket.close(() => resolve(true)));
  });
}

function tcpFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host: '0.0.0.0', exclusive: true }, () => server.close(() => resolve(true)));
  });
}

export const harborPortOf = (number: number): number => 8100 + number - 1;

/** A station number in 900-1000 whose harbor port is free on UDP and TCP (random order: parallel test files rarely meet). */
export async function freeStationNumber(): Promise<number> {
  const numbers = Array.from({ length: 101 }, (_, i) => 900 + i).sort(() => Math.random() - 0.5);
  for (const n of numbers) {
    if (handedOut.has(n)) continue;
    const port = harborPortOf(n);
    if ((await udpFree(port)) && (await tcpFree(port))) {
      handedOut.add(n);
      return n;
    }
  }
  throw new Error('no free station number in 900-1000');
}

/** The dashboard of a started engine (its port is in the `ready` log line). */
export function dashboardOf(engine: EngineProcess): { url: string; port: number } {
  const ready = engine.logs.find((l) => l.event === 'ready');
  const port = ready?.dashboard_port;
  if (typeof port !== 'number') throw new Error('the engine did not log its dashboard port');
  return { url: `http://127.0.0.1:${port}`, port };
}

/** The station `id` as `GET /api/stations/{id}` on the dashboard port shows it (200 or it throws). */
export async function getStation(engine: EngineProcess, id: string): Promise<StationView> {
  const got = await api<StationView>(dashboardOf(engine), 'GET', `/api/stations/${id}`);
  if (got.status !== 200) throw new Error(`GET station ${id}: ${got.status} ${got.text}`);
  return got.body;
}

/** Polls the station `id` until `ok` holds (a non-200 answer is polled again); the view that did. */
export function whenStation(engine: EngineProcess, id: string, ok: (s: StationView) => boolean, what: string, timeoutMs = 20_000): Promise<StationView> {
  return eventually(async () => {
    const got = await api<StationView>(dashboardOf(engine), 'GET', `/api/stations/${id}`);
    return got.status === 200 && ok(got.body) ? got.body : undefined;
  }, timeoutMs, `station ${id}: ${what}`);
}

export interface StationToml {
  id: string;
  number: number;
  rtpPort: number;
  harbor?: 'srt' | 'icecast';
  password?: string;
  autostart?: boolean;
  processing?: string;
}

export function stationToml(s: StationToml): string {
  return [
    '[[stations]]',
    `id = "${s.id}"`,
    `number = ${s.number}`,
    `name = "Station ${s.id}"`,
    s.harbor === undefined ? '' : `harbor = "${s.harbor}"`,
    s.password === undefined ? '' : `password = "${s.password}"`,
    s.autostart === undefined ? '' : `autostart = ${String(s.autostart)}`,
    s.processing === undefined ? '' : `processing = ${s.processing}`,
    `output = { type = "rtp", host = "127.0.0.1", port = ${s.rtpPort} }`,
    '',
  ].join('\n');
}

export interface IcecastSourceOptions {
  port: number;
  password: string;
  amplitude: number;
  seconds: number;
  frequency?: number;
  codec?: 'mp3' | 'ogg' | 'aac';
  mount?: string;
}

export interface IcecastSource {
  process: ChildProcess;
  done: Promise<number | null>;
  stderr(): string;
  stop(): void;
}

/** ffmpeg as an Icecast source client: `icecast://source:PASS@127.0.0.1:PORT/mount`, real time. */
export function sendIcecast(options: IcecastSourceOptions): IcecastSource {
  const f = options.frequency ?? 1000;
  const expr = `${options.amplitude}*sin(2*PI*${f}*t)`;
  const codec = options.codec ?? 'mp3';
  const codecArgs =
    codec === 'mp3' ? ['-c:a', 'libmp3lame', '-b:a', '192k', '-f', 'mp3', '-content_type', 'audio/mpeg']
    : codec === 'ogg' ? ['-c:a', 'libvorbis', '-q:a', '6', '-f', 'ogg', '-content_type', 'audio/ogg']
    : ['-c:a', 'aac', '-b:a', '192k', '-f', 'adts', '-content_type', 'audio/aac'];
  const args = [
    '-hide_banner', '-loglevel', 'error', '-nostdin', '-re',
    '-f', 'lavfi', '-i', `aevalsrc=${expr}|${expr}:s=48000:d=${options.seconds}`,
    ...codecArgs,
    `icecast://source:${options.password}@127.0.0.1:${options.port}${options.mount ?? '/live'}`,
  ];
  const child = spawn('ffmpeg', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const done = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    process: child,
    done,
    stderr: () => stderr,
    stop(): void {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** Pids of live gst-launch processes whose command line holds `needle` (e.g. `localport=9001`). */
export async function gstProcessesWith(needle: string): Promise<number[]> {
  const pids: number[] = [];
  for (const name of await readdir('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      const cmdline = (await readFile(`/proc/${name}/cmdline`, 'utf8')).split('\0');
      if (cmdline.some((a) => a.endsWith('gst-launch-1.0')) && cmdline.includes(needle)) pids.push(Number(name));
    } catch {
      // gone
    }
  }
  return pids;
}
