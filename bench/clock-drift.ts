/**
 * The clock bridge against a sender clock off by +-1000 ppm, for a long window: two engine graphs
 * (compilePipeline, no processing, clock.source "realtime", jitter 20 ms, 4 packets per send),
 * each fed by an ffmpeg SRT caller reading its input 0.1 % fast (-readrate 1.001) or slow (0.999),
 * AAC in MPEG-TS. From the children's own messages over the window (after `settleS`):
 *   - slips: underruns + overruns of the bridge in the window (goal 0);
 *   - fill: lowest and highest FIFO fill (the element's time average) against the fill it keeps,
 *     its setpoint = target + the input's saw-tooth depth (goal: setpoint +- 1 ms);
 *   - drift: the bridge's measured drift (expected +-1000 ppm);
 *   - packets: RTP packets sent per second of pipeline clock (pipelinestats output-packets over
 *     running time; expected exactly 1000).
 * The callers' ffmpeg uses -pes_payload_size 0 (one AAC frame per PES: input every 21 ms; its
 * default packs ~85 ms per PES, more than the 20 ms target covers). The ratio reported is measured
 * over measured; there is no second implementation to hold against in this run.
 *
 *   node --import=tsx bench/clock-drift.ts [--window S] [--settle S] [--plugin-path DIR]
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { compilePipeline } from '../src/compiler/compile.js';
import { parsePipelineSpec } from '../src/spec/validate.js';
import { parseLine } from '../src/stats/parse-line.js';
import { runIfMain } from './process.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface ClockDriftOptions {
  windowS?: number;
  settleS?: number;
  pluginPath?: string;
}

export interface ClockDriftCase {
  readrate: number;
  reports: number;
  slips: number;
  underruns: [number, number];
  overruns: [number, number];
  fillMinMs: number;
  fillMaxMs: number;
  targetMs: number;
  setpointMinMs: number;
  setpointMaxMs: number;
  /** Largest |fill - setpoint| over the window, ms. */
  fillErrorMaxMs: number;
  /** The same over means of 10 consecutive reports (10 s): the loop's hold, the sender's frame jitter averaged out. */
  fillError10sMaxMs: number;
  driftPpm: { min: number; max: number; last: number };
  packetsPerSecond: number;
}

export interface ClockDriftResult {
  windowS: number;
  settleS: number;
  cases: ClockDriftCase[];
}

async function freeUdpPort(): Promise<number> {
  // a TCP probe is enough for a free-looking number on loopback; SRT binds UDP and reports a clash
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  server.close();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function runCase(readrate: number, windowS: number, settleS: number, pluginPath: string): Promise<ClockDriftCase> {
  const srtPort = await freeUdpPort();
  const spec = parsePipelineSpec({ name: 'drift', input: { type: 'srt', port: srtPort, latency: 120 }, output: { type: 'rtp', host: '127.0.0.1', port: 9 } });
  const argv = compilePipeline(spec, { statsIntervalMs: 1000, packetsPerSend: 4, clockSource: 'realtime', jitterMs: 20 });
  const gst = spawn('gst-launch-1.0', argv, { env: { ...process.env, GST_PLUGIN_PATH: pluginPath }, stdio: ['ignore', 'pipe', 'ignore'] });
  const seconds = settleS + windowS + 5;
  const sine = `0.5*sin(2*PI*997*t)`;
  const ffmpeg = spawn('ffmpeg', [
    '-hide_banner', '-loglevel', 'error', '-nostdin', '-readrate', String(readrate),
    '-f', 'lavfi', '-i', `aevalsrc=${sine}|${sine}:s=48000:d=${seconds}`,
    '-c:a', 'aac', '-b:a', '256k', '-pes_payload_size', '0',
    '-f', 'mpegts', `srt://127.0.0.1:${srtPort}?mode=caller&latency=120000&connect_timeout=5000`,
  ], { stdio: 'ignore' });
  const startedAt = Date.now();
  const result: ClockDriftCase = {
    readrate, reports: 0, slips: 0, underruns: [0, 0], overruns: [0, 0], fillMinMs: Infinity, fillMaxMs: -Infinity,
    targetMs: 20, setpointMinMs: Infinity, setpointMaxMs: -Infinity, fillErrorMaxMs: 0, fillError10sMaxMs: 0, driftPpm: { min: Infinity, max: -Infinity, last: NaN }, packetsPerSecond: NaN,
  };
  const errorsMs: number[] = [];
  let first: { packets: number; runningNs: number } | undefined;
  let last: { packets: number; runningNs: number } | undefined;
  const lines = createInterface({ input: gst.stdout });
  const windowFrom = startedAt + settleS * 1000;
  const windowTo = windowFrom + windowS * 1000;
  lines.on('line', (line) => {
    const now = Date.now();
    if (now < windowFrom || now > windowTo) return;
    const event = parseLine(line);
    if (event?.kind === 'clockbridge') {
      if (result.reports === 0) {
        result.underruns[0] = event.underruns;
        result.overruns[0] = event.overruns;
      }
      result.reports += 1;
      result.underruns[1] = event.underruns;
      result.overruns[1] = event.overruns;
      result.fillMinMs = Math.min(result.fillMinMs, event.fillSeconds * 1000);
      result.fillMaxMs = Math.max(result.fillMaxMs, event.fillSeconds * 1000);
      result.targetMs = event.targetSeconds * 1000;
      result.setpointMinMs = Math.min(result.setpointMinMs, event.setpointSeconds * 1000);
      result.setpointMaxMs = Math.max(result.setpointMaxMs, event.setpointSeconds * 1000);
      result.fillErrorMaxMs = Math.max(result.fillErrorMaxMs, Math.abs(event.fillSeconds - event.setpointSeconds) * 1000);
      errorsMs.push((event.fillSeconds - event.setpointSeconds) * 1000);
      // NaN: a drift the bridge does not know yet (docs/clock.md); last shows it
      if (Number.isFinite(event.driftPpm)) {
        result.driftPpm.min = Math.min(result.driftPpm.min, event.driftPpm);
        result.driftPpm.max = Math.max(result.driftPpm.max, event.driftPpm);
      }
      result.driftPpm.last = event.driftPpm;
    } else if (event?.kind === 'pipelinestats' && event.output !== undefined) {
      const running = /running-time=\(guint64\)(\d+)/.exec(line)?.[1];
      if (running === undefined) return;
      const sample = { packets: event.output.packets, runningNs: Number(running) };
      first ??= sample;
      last = sample;
    }
  });
  await new Promise((resolve) => setTimeout(resolve, (settleS + windowS) * 1000 + 500));
  ffmpeg.kill('SIGKILL');
  gst.kill('SIGINT');
  await once(gst, 'exit');
  for (let i = 0; i + 10 <= errorsMs.length; i += 10) {
    const mean = errorsMs.slice(i, i + 10).reduce((a, b) => a + b, 0) / 10;
    result.fillError10sMaxMs = Math.max(result.fillError10sMaxMs, Math.abs(mean));
  }
  result.slips = result.underruns[1] - result.underruns[0] + result.overruns[1] - result.overruns[0];
  if (first !== undefined && last !== undefined && last.runningNs > first.runningNs) {
    result.packetsPerSecond = (last.packets - first.packets) / ((last.runningNs - first.runningNs) / 1e9);
  }
  return result;
}

export async function runClockDriftBench(options: ClockDriftOptions = {}): Promise<ClockDriftResult> {
  const windowS = options.windowS ?? 600;
  const settleS = options.settleS ?? 30;
  const pluginPath = options.pluginPath ?? path.join(ROOT, 'gst-plugins', 'build');
  process.stderr.write(`clock drift: +-1000 ppm callers, ${settleS} s to settle, then a ${windowS} s window\n`);
  const cases = await Promise.all([1.001, 0.999].map((r) => runCase(r, windowS, settleS, pluginPath)));
  return { windowS, settleS, cases };
}

export function clockDriftTable(r: ClockDriftResult): string {
  const f = (x: number, d = 2): string => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
  return [
    `Clock bridge, ${r.windowS} s window after ${r.settleS} s (callers -readrate 1.001 / 0.999):`,
    '',
    '| sender | slips (under+over) | fill min..max ms | setpoint min..max ms (target) | max abs(fill - setpoint) ms | within +-1 ms | the same, 10 s means | drift ppm min..max | RTP packets/s of pipeline clock |',
    '|---|---:|---|---|---:|---|---:|---|---:|',
    ...r.cases.map((c) =>
      `| ${c.readrate > 1 ? '+' : '-'}1000 ppm | ${c.slips} | ${f(c.fillMinMs)}..${f(c.fillMaxMs)} | ${f(c.setpointMinMs)}..${f(c.setpointMaxMs)} (${f(c.targetMs, 0)}) | ` +
      `${f(c.fillErrorMaxMs)} | ${c.fillErrorMaxMs <= 1 ? 'yes' : 'no'} | ${f(c.fillError10sMaxMs)} | ${f(c.driftPpm.min, 1)}..${f(c.driftPpm.max, 1)} | ${f(c.packetsPerSecond, 3)} |`),
  ].join('\n');
}

runIfMain(import.meta.url, 'clock-drift', async () => {
  const args = process.argv.slice(2);
  const opt = (name: string): number | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? Number(args[i + 1]) : undefined;
  };
  const pathAt = args.indexOf('--plugin-path');
  const r = await runClockDriftBench({ windowS: opt('--window'), settleS: opt('--settle'), pluginPath: pathAt >= 0 ? args[pathAt + 1] : undefined });
  process.stdout.write(`\n${clockDriftTable(r)}\n\n${JSON.stringify(r, null, 2)}\n`);
});
