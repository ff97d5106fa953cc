/**
 * CPU of one pipeline, the engine's graph (clock bridge, loudnorm + 3-band EQ, 4 packets per send)
 * against one ffmpeg doing the same job, side by side in the same run, with a second copy of the
 * engine's graph as the noise floor (two identical pipelines differ by up to a point of a core on
 * a shared 2-core VM): the three run at once, each fed by its own ffmpeg AAC caller
 * (-pes_payload_size 0), and each process's CPU (user + system, /proc/PID/stat) is read over the
 * same window. ffmpeg, as users would write it (bench/ffmpeg-pipeline.ts): SRT listener ->
 * loudnorm (-23 LUFS, -1 dBTP) + three peaking equalizers (the same bands, Q 1) -> pcm_s24be RTP
 * in 1 ms packets.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compilePipeline } from '../src/compiler/compile.js';
import { parsePipelineSpec } from '../src/spec/validate.js';
import { ffmpegPipelineArgv } from './ffmpeg-pipeline.js';
import { runIfMain } from './process.js';

const USAGE = `usage:
  node --import=tsx bench/clock-cpu.ts [--window S] [--rounds N] [--plugin-path DIR]
      the engine's graph, a second copy of it and one ffmpeg side by side (default 3 rounds of 60 s)
  node --import=tsx bench/clock-cpu.ts --scale 1,4,8 [--window S] [--plugin-path DIR]
      the sweep: N pipelines of one kind at a time (default window 30 s)
`;

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TICKS_PER_S = 100; // getconf CLK_TCK on Linux

export interface ClockCpuRound {
  windowS: number;
  /** The engine's graph (clock bridge). */
  enginePercent: number;
  /** A second copy of the engine's graph in the same round: how far two identical pipelines differ. */
  twinPercent: number;
  ffmpegPercent: number;
}

export interface ClockCpuResult {
  rounds: ClockCpuRound[];
  medianEnginePercent: number;
  medianTwinPercent: number;
  medianFfmpegPercent: number;
  /** Median over rounds of |engine - twin|: the noise floor of one pipeline's figure on this machine. */
  medianTwinPoints: number;
}

const EQ_BANDS = [{ freq: 100, gain: -2 }, { freq: 1000, gain: 1 }, { freq: 8000, gain: 1.5 }];

/** The engine's own argv for the bench's pipeline: SRT listener on `srtPort`, loudnorm + 3-band EQ. */
function engineArgv(srtPort: number): string[] {
  const spec = parsePipelineSpec({
    name: 'engine', input: { type: 'srt', port: srtPort, latency: 120 },
    processing: [{ plugin: 'loudness-normalize', target: -23 }, { plugin: 'eq', bands: EQ_BANDS }],
    output: { type: 'rtp', host: '127.0.0.1', port: 9 },
  });
  return compilePipeline(spec, { statsIntervalMs: 1000, packetsPerSend: 4, clockSource: 'realtime', jitterMs: 20 });
}

async function cpuTicks(pid: number): Promise<number> {
  const fields = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? [];
  return Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of stat)
}

type Kind = 'engine' | 'ffmpeg';

/**
 * One pipeline process per entry of `kinds`, on SRT ports basePort, basePort + 1, ..., each fed by
 * its own ffmpeg AAC caller (-pes_payload_size 0); the CPU of each over the same window, % of a
 * core, in the order of `kinds`. Every process is gone when it returns, also on failure.
 */
async function sideBySide(kinds: readonly Kind[], windowS: number, pluginPath: string, basePort: number): Promise<{ windowS: number; percents: number[] }> {
  const children: ChildProcess[] = [];
  const env = { ...process.env, GST_PLUGIN_PATH: pluginPath };
  try {
    const pipelines = kinds.map((kind, i) => {
      const child = kind === 'ffmpeg'
        ? spawn('ffmpeg', ffmpegPipelineArgv({ srtPort: basePort + i, rtpPort: 9, latencyMs: 120, targetLufs: -23, bands: EQ_BANDS }), { stdio: 'ignore' })
        : spawn('gst-launch-1.0', engineArgv(basePort + i), { env, stdio: 'ignore' });
      children.push(child);
      return child;
    });
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const sine = '0.3*sin(2*PI*997*t)';
    kinds.forEach((_, i) => {
      children.push(spawn('ffmpeg', [
        '-hide_banner', '-loglevel', 'quiet', '-nostdin', '-re', '-f', 'lavfi', '-i', `aevalsrc=${sine}|${sine}:s=48000:d=${windowS + 20}`,
        '-c:a', 'aac', '-b:a', '256k', '-pes_payload_size', '0', '-f', 'mpegts', `srt://127.0.0.1:${basePort + i}?mode=caller&latency=120000`,
      ], { stdio: 'ignore' }));
    });
    await new Promise((resolve) => setTimeout(resolve, 8000));
    pipelines.forEach((c, i) => {
      if (c.exitCode !== null || c.signalCode !== null) throw new Error(`clock cpu: the ${kinds[i] ?? '?'} process on port ${basePort + i} ended before the window`);
    });
    const pids = pipelines.map((c) => c.pid ?? 0);
    const before = await Promise.all(pids.map(cpuTicks));
    const t0 = performance.now();
    await new Promise((resolve) => setTimeout(resolve, windowS * 1000));
    const after = await Promise.all(pids.map(cpuTicks));
    const w = (performance.now() - t0) / 1000;
    return { windowS: w, percents: pids.map((_, i) => (((after[i] ?? 0) - (before[i] ?? 0)) / TICKS_PER_S / w) * 100) };
  } finally {
    for (const child of children) child.kill('SIGKILL');
    await Promise.all(children.filter((c) => c.exitCode === null && c.signalCode === null).map((c) => once(c, 'exit')));
  }
}

/** One round: the engine's graph, ffmpeg and a second copy of the engine's graph (the noise floor) at once. */
async function round(windowS: number, pluginPath: string, basePort: number): Promise<ClockCpuRound> {
  const { windowS: w, percents: [engine, ffmpeg, twin] } = await sideBySide(['engine', 'ffmpeg', 'engine'], windowS, pluginPath, basePort);
  return { windowS: w, enginePercent: engine ?? NaN, twinPercent: twin ?? NaN, ffmpegPercent: ffmpeg ?? NaN };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] ?? NaN) : ((s[m - 1] ?? NaN) + (s[m] ?? NaN)) / 2;
};

export async function runClockCpuBench(options: { windowS?: number; rounds?: number; pluginPath?: string } = {}): Promise<ClockCpuResult> {
  const windowS = options.windowS ?? 60;
  const pluginPath = options.pluginPath ?? path.join(ROOT, 'gst-plugins', 'build');
  const rounds: ClockCpuRound[] = [];
  for (let i = 0; i < (options.rounds ?? 3); i++) {
    const r = await round(windowS, pluginPath, 19710 + 3 * i);
    process.stderr.write(`clock cpu round ${i + 1}: engine ${r.enginePercent.toFixed(2)} % (its twin ${r.twinPercent.toFixed(2)}), ffmpeg ${r.ffmpegPercent.toFixed(2)} % of a core\n`);
    rounds.push(r);
  }
  return {
    rounds,
    medianEnginePercent: median(rounds.map((r) => r.enginePercent)),
    medianTwinPercent: median(rounds.map((r) => r.twinPercent)),
    medianFfmpegPercent: median(rounds.map((r) => r.ffmpegPercent)),
    medianTwinPoints: median(rounds.map((r) => Math.abs(r.enginePercent - r.twinPercent))),
  };
}

export function clockCpuTable(r: ClockCpuResult): string {
  return [
    `One pipeline (loudnorm + 3-band EQ): the engine's graph, a second copy of it and one ffmpeg doing the same job side by side, ${r.rounds.length} rounds:`,
    '',
    '| graph | median CPU, % of a core | rounds |',
    '|---|---:|---|',
    `| engine (clockbridge, media-clock) | ${r.medianEnginePercent.toFixed(2)} | ${r.rounds.map((x) => x.enginePercent.toFixed(2)).join(', ')} |`,
    `| engine, a second copy (the noise floor) | ${r.medianTwinPercent.toFixed(2)} | ${r.rounds.map((x) => x.twinPercent.toFixed(2)).join(', ')} |`,
    `| ffmpeg (SRT -> loudnorm + equalizer x3 -> pcm_s24be RTP, 1 ms) | ${r.medianFfmpegPercent.toFixed(2)} | ${r.rounds.map((x) => x.ffmpegPercent.toFixed(2)).join(', ')} |`,
    '',
    `- ffmpeg / engine: **${(r.medianFfmpegPercent / r.medianEnginePercent).toFixed(1)}x** the CPU of the engine's pipeline`,
    `- two copies of the engine's graph differ by ${r.medianTwinPoints.toFixed(2)} points (median over rounds): a difference smaller than that is not measured here`,
  ].join('\n');
}

/** One kind of pipeline at one N: per-pipeline CPU over the window, % of a core. */
export interface ClockScaleCell {
  kind: Kind;
  n: number;
  medianPercent: number;
  meanPercent: number;
}

/**
 * The scale sweep of the two kinds, in the same run: for each N, N pipelines of one kind at a
 * time (the engine's graph, one ffmpeg per pipeline), each fed by its own ffmpeg caller,
 * CPU of every pipeline process over the window. One kind at a time, so the N pipelines of a kind
 * share the machine only with their callers. Real-time delivery is not checked here (the
 * engine's scale sweep does that); the figure is the CPU each kind needs for the same job.
 */
async function scaleCell(kind: ClockScaleCell['kind'], n: number, windowS: number, pluginPath: string, basePort: number): Promise<ClockScaleCell> {
  const { percents } = await sideBySide(Array.from({ length: n }, () => kind), windowS, pluginPath, basePort);
  return { kind, n, medianPercent: median(percents), meanPercent: percents.reduce((a, b) => a + b, 0) / percents.length };
}

export async function runClockScaleBench(options: { ns: number[]; windowS?: number; pluginPath?: string }): Promise<ClockScaleCell[]> {
  const windowS = options.windowS ?? 30;
  const pluginPath = options.pluginPath ?? path.join(ROOT, 'gst-plugins', 'build');
  const cells: ClockScaleCell[] = [];
  for (const n of options.ns) {
    for (const kind of ['engine', 'ffmpeg'] as const) {
      const cell = await scaleCell(kind, n, windowS, pluginPath, 19760);
      process.stderr.write(`clock cpu scale N=${n} ${kind}: ${cell.medianPercent.toFixed(2)} % of a core per pipeline (median; mean ${cell.meanPercent.toFixed(2)})\n`);
      cells.push(cell);
    }
  }
  return cells;
}

export function clockScaleTable(cells: ClockScaleCell[]): string {
  const ns = [...new Set(cells.map((c) => c.n))];
  const at = (n: number, kind: ClockScaleCell['kind']): ClockScaleCell | undefined => cells.find((c) => c.n === n && c.kind === kind);
  const f = (c: ClockScaleCell | undefined): string => (c === undefined ? '-' : `${c.medianPercent.toFixed(2)} (${c.meanPercent.toFixed(2)})`);
  return [
    'N pipelines of one kind at a time, each with its own ffmpeg AAC caller; CPU per pipeline, % of a core, median (mean):',
    '',
    '| N | engine (clockbridge) | one ffmpeg per pipeline | ffmpeg / engine (medians) |',
    '|---:|---:|---:|---:|',
    ...ns.map((n) => {
      const engine = at(n, 'engine'), ff = at(n, 'ffmpeg');
      const ratio = ff !== undefined && engine !== undefined ? `${(ff.medianPercent / engine.medianPercent).toFixed(1)}x` : '-';
      return `| ${n} | ${f(engine)} | ${f(ff)} | ${ratio} |`;
    }),
  ].join('\n');
}

runIfMain(import.meta.url, 'clock-cpu', async () => {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(USAGE);
    return;
  }
  const num = (name: string): number | undefined => {
    const i = args.indexOf(name);
    return i >= 0 ? Number(args[i + 1]) : undefined;
  };
  const at = args.indexOf('--plugin-path');
  const pluginPath = at >= 0 ? args[at + 1] : undefined;
  const scale = args.indexOf('--scale');
  if (scale >= 0) {
    const ns = (args[scale + 1] ?? '').split(',').map(Number);
    if (ns.some((n) => !Number.isInteger(n) || n < 1 || n > 64)) throw new Error('--scale takes whole numbers 1-64, comma separated');
    const cells = await runClockScaleBench({ ns, windowS: num('--window'), pluginPath });
    process.stdout.write(`\n${clockScaleTable(cells)}\n\n${JSON.stringify(cells, null, 2)}\n`);
    return;
  }
  const r = await runClockCpuBench({ windowS: num('--window'), rounds: num('--rounds'), pluginPath });
  process.stdout.write(`\n${clockCpuTable(r)}\n\n${JSON.stringify(r, null, 2)}\n`);
});
