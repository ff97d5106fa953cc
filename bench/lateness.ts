/**
 * On time, side by side (`npm run bench -- --only lateness`): the floor sender
 * (bench/floor-sender.c: SCHED_FIFO, clock_nanosleep to each 4 ms boundary, 4 packets per
 * sendmmsg, media-clock timestamps) beside two of the engine's graphs (loudnorm -23 + 3-band EQ,
 * the compiler's argv) fed by ffmpeg SRT callers 1000 ppm fast and slow (`-readrate 1.001` and
 * `0.999`), all in one window. Each RTP stream is received by test/helpers/rtp-timing.py, which
 * takes the kernel's receive time of every packet (SO_TIMESTAMPNS, CLOCK_REALTIME), so a busy
 * receiver does not count as lateness. A packet is late by its receive time minus the clock time
 * of its media-clock timestamp; per stream: the seconds of the window with a packet more than
 * 1 ms late, and the worst case. Both the engine's graphs and the floor sender run on
 * CLOCK_REALTIME here (`clock.source = "realtime"`; the engine's default, tai, is the same code
 * on another clock id), so the receive times compare without the TAI offset.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { compilePipeline } from '../src/compiler/compile.js';
import { parsePipelineSpec } from '../src/spec/validate.js';
import { between, mediaClockOffset, realtimeNs } from '../test/helpers/clock-analysis.js';
import { freeTcpPort } from '../test/helpers/ports.js';
import { RtpTiming, type TimedPacket } from '../test/helpers/rtp-timing.js';
import { sendSine, type Sender } from '../test/helpers/srt-sender.js';
import { FLOOR_SENDER_SOURCE, COST_COMPILE_OPTIONS } from './cost.js';
import { BENCH_PROCESSING } from './engine.js';
import { benchBinary, killGroup, ROOT, sleep } from './engine-harness.js';
import { runIfMain } from './process.js';

export interface LatenessStream {
  name: string;
  packets: number;
  /** seconds of the window in which some packet arrived more than 1 ms after its timestamp's time */
  lateSeconds: number;
  /** the latest packet, ms after its timestamp's time (negative: it left early, as a batch's do) */
  worstLateMs: number;
}

export interface LatenessResult {
  windowS: number;
  settleS: number;
  streams: LatenessStream[];
  floorRealtime: boolean;
  commands: Record<string, string[]>;
}

/** Per stream: late seconds (> 1 ms) and the worst lateness, over the packets of the window. */
export function lateness(name: string, packets: readonly TimedPacket[], fromNs: bigint): LatenessStream {
  const lateSeconds = new Set<bigint>();
  let worst = Number.NEGATIVE_INFINITY;
  for (const p of packets) {
    const lateMs = -mediaClockOffset(p) / 48; // offset < 0: received after its time
    if (lateMs > 1) lateSeconds.add((p.recvNs - fromNs) / 1_000_000_000n);
    worst = Math.max(worst, lateMs);
  }
  return { name, packets: packets.length, lateSeconds: lateSeconds.size, worstLateMs: worst };
}

export async function runLatenessBench(options: { windowS?: number; settleS?: number; pluginPath?: string; cacheDir?: string; log?: (l: string) => void } = {}): Promise<LatenessResult> {
  const windowS = options.windowS ?? 60;
  const settleS = options.settleS ?? 20;
  const log = options.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const pluginPath = options.pluginPath ?? path.join(ROOT, 'gst-plugins', 'build');
  const floorBin = await benchBinary(FLOOR_SENDER_SOURCE, options.cacheDir ?? path.join(tmpdir(), 'audioengine-bench'));
  const total = settleS + windowS + 15;
  const receivers: RtpTiming[] = [];
  const children: ChildProcess[] = [];
  const senders: Sender[] = [];
  try {
    for (let i = 0; i < 3; i++) receivers.push(await RtpTiming.open(total));
    const [floorRx, fastRx, slowRx] = receivers;
    if (floorRx === undefined || fastRx === undefined || slowRx === undefined) throw new Error('lateness: no receiver');
    const commands: Record<string, string[]> = {};
    const env = { ...process.env, GST_PLUGIN_PATH: pluginPath };
    for (const [name, rx, readrate] of [['+1000 ppm', fastRx, 1.001], ['-1000 ppm', slowRx, 0.999]] as const) {
      const srtPort = await freeTcpPort();
      const argv = compilePipeline(parsePipelineSpec({
        name: 'lateness', input: { type: 'srt', port: srtPort, latency: 300 }, processing: BENCH_PROCESSING,
        output: { type: 'rtp', host: '127.0.0.1', port: rx.port },
      }), { ...COST_COMPILE_OPTIONS, clockSource: 'realtime' });
      const child = spawn('gst-launch-1.0', argv, { env, stdio: ['ignore', 'pipe', 'ignore', 'pipe', 'pipe'], detached: true });
      child.on('error', () => undefined);
      child.stdout?.resume();
      children.push(child);
      commands[`engine ${name}`] = ['gst-launch-1.0', ...argv];
      const sender = sendSine({ port: srtPort, amplitude: 0.5, seconds: total, readrate });
      senders.push(sender);
      commands[`caller ${name}`] = ['ffmpeg', `-readrate ${readrate}`, '(test/helpers/srt-sender.ts)'];
    }
    const floorCommand = [floorBin, '127.0.0.1', String(floorRx.port), '0', 'realtime'];
    const floor = spawn(floorCommand[0] ?? 'false', floorCommand.slice(1), { stdio: ['ignore', 'pipe', 'ignore'], detached: true });
    floor.on('error', () => undefined);
    const hello = new Promise<string>((resolve) => floor.stdout?.once('data', (d: Buffer) => resolve(d.toString())));
    children.push(floor);
    commands.floor = floorCommand;
    await sleep(settleS * 1000);
    for (const c of children) if (c.exitCode !== null || c.signalCode !== null) throw new Error(`lateness: ${c.spawnfile} ended before the window`);
    const from = realtimeNs();
    await sleep(windowS * 1000);
    const to = realtimeNs();
    for (const c of children) if (c.exitCode !== null || c.signalCode !== null) throw new Error(`lateness: ${c.spawnfile} ended in the window`);
    await Promise.all(receivers.map((r) => r.close()));
    const streams = [['floor sender', floorRx], ['engine, caller +1000 ppm', fastRx], ['engine, caller -1000 ppm', slowRx]] as const;
    const result = streams.map(([name, rx]) => lateness(name, between(rx.packets, from, to), from));
    const floorRealtime = (JSON.parse((await hello).split('\n')[0] ?? '{}') as { realtime?: boolean }).realtime === true;
    log(`lateness: ${result.map((s) => `${s.name} ${s.lateSeconds} s late, worst ${s.worstLateMs.toFixed(1)} ms`).join('; ')}`);
    return { windowS, settleS, streams: result, floorRealtime, commands };
  } finally {
    for (const s of senders) s.stop();
    for (const c of children) killGroup(c.pid, 'SIGKILL');
    await Promise.all(receivers.map((r) => r.close().catch(() => undefined)));
    await Promise.all([...children.map((c) => (c.exitCode !== null || c.signalCode !== null ? undefined : Promise.race([new Promise((res) => c.once('exit', res)), sleep(2000)]))),
      ...senders.map((s) => Promise.race([s.done, sleep(2000)]))]);
  }
}

export function latenessTable(r: LatenessResult): string {
  return [
    `On time side by side, one ${r.windowS} s window after ${r.settleS} s (kernel receive timestamps; floor sender ${r.floorRealtime ? 'SCHED_FIFO' : 'not SCHED_FIFO'}):`,
    '',
    '| stream | packets | seconds with a packet > 1 ms late | worst, ms after its time |',
    '|---|---:|---:|---:|',
    ...r.streams.map((s) => `| ${s.name} | ${s.packets} | ${s.lateSeconds} of ${r.windowS} | ${s.worstLateMs.toFixed(2)} |`),
  ].join('\n');
}

runIfMain(import.meta.url, 'lateness', async () => {
  const args = process.argv.slice(2);
  const num = (name: string): number | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? Number(args[i + 1]) : undefined;
  };
  const r = await runLatenessBench({ windowS: num('--window'), settleS: num('--settle') });
  process.stdout.write(`\n${latenessTable(r)}\n\n${JSON.stringify(r, null, 2)}\n`);
});
