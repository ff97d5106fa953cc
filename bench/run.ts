/**
 * `npm run bench`: the DSP benchmarks of our GStreamer elements and the engine benchmarks.
 *
 *   npm run bench -- [--runs N] [--only eq|loudnorm|resampler|engine|scale|drift|clockcpu|cost|lateness|failover|overview|control] [--quick]
 *                    [--cache-dir DIR] [--plugin-path DIR] [--duration S] [--sender gst-shared|gst|ffmpeg] [--scale 1,8,16]
 *                    [--window S] [--packets-per-send K] [--admission] [--reference ffmpeg|floor|passthrough|no-bridge] [--drift-window S] [--rounds N] [--losses N] [--pipelines N]
 *
 * Runs bench/dsp-eq.ts (parametriceq vs equalizer-nbands), bench/dsp-loudnorm.ts (loudnorm vs
 * ffmpeg loudnorm, with the loudness each delivers), bench/dsp-resampler.ts (the clockbridge
 * resampler vs audioresample quality=10 and ffmpeg soxr, with THD+N) and bench/engine.ts (engine ready time,
 * create -> running, REST and gRPC latency; N concurrent real-time pipelines, with `--reference
 * ffmpeg` beside one ffmpeg per pipeline doing the same job), prints one
 * markdown report and writes the whole result as JSON to bench/results/latest.json. It reports
 * ratios and never asserts a timing: the exit code is 0 unless a benchmark could not run.
 * bench/clock-drift.ts (drift): the clock bridge under +-1000 ppm callers for `--drift-window` s
 * (default 600; 60 with --quick). bench/clock-cpu.ts (clockcpu): one pipeline's CPU, the engine's
 * graph beside a second copy (the noise floor) and one ffmpeg doing the same job, 3 rounds of 60 s
 * (20 s with --quick). bench/cost.ts (cost): where one pipeline's CPU goes, the full graph beside
 * cuts of it (one stage removed or replaced each), a second copy and a minimal C sender, `--runs`
 * rounds (default 3) of `--window` s (default 30; 15 with --quick). bench/lateness.ts (lateness): the
 * floor sender beside two pipelines fed at +-1000 ppm, late packets by kernel receive time, one
 * `--window` s window (default 60; 20 with --quick). bench/failover.ts (failover): the CPU of a pipeline
 * with a backup input against the same without, side by side, `--rounds` rounds (default 4; 2 with --quick) of
 * `--window` s (default 20; 10 with --quick), then the switch to the backup over `--losses` kills of
 * the main sender (default 20; 5 with --quick). bench/control-plane.ts (control): REST, gRPC and the
 * page's answer times with `--pipelines` (default 48) pipelines admitted on the host, the engine at
 * control_priority 15 and at 0 in turn, `--rounds` rounds (default 2; 1 with --quick).
 * `--quick`: 2 runs of 60 s programmes for the DSP benches, fewer repetitions and N = 1, 8 for
 * the engine (about 3 minutes in all).
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, hostname } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { runEqBench, type EqBenchCaseName, type EqBenchResult } from './dsp-eq.js';
import {
  LOUDNORM_CASE_ORDER,
  loudnormLoudnessLine,
  runLoudnormBench,
  type LoudnormBenchResult,
} from './dsp-loudnorm.js';
import { resamplerBenchMarkdown, runResamplerBench, type ResamplerBenchResult } from './dsp-resampler.js';
import { engineBenchFlag, engineTable, ENGINE_USAGE, runEngineBench, type EngineBenchOptions, type EngineBenchResult } from './engine.js';
import { DEFAULT_DURATION_S, DEFAULT_RUNS, parseBenchArgs, type BenchArgs } from './process.js';
import { clockDriftTable, runClockDriftBench, type ClockDriftResult } from './clock-drift.js';
import { clockCpuTable, runClockCpuBench, type ClockCpuResult } from './clock-cpu.js';
import { costTable, runCostBench, type CostResult } from './cost.js';
import { latenessTable, runLatenessBench, type LatenessResult } from './lateness.js';
import { failoverTable, runFailoverBench, type FailoverResult } from './failover.js';
import { overviewTable, runOverviewBench, type OverviewBenchResult } from './dashboard-overview.js';
import { controlPlaneTable, runControlPlaneBench, type ControlPlaneResult } from './control-plane.js';

type BenchName = 'eq' | 'loudnorm' | 'resampler' | 'engine' | 'scale' | 'drift' | 'clockcpu' | 'cost' | 'lateness' | 'failover' | 'overview' | 'control';
const BENCH_NAMES: readonly BenchName[] = ['eq', 'loudnorm', 'resampler', 'engine', 'scale', 'drift', 'clockcpu', 'cost', 'lateness', 'failover', 'overview', 'control'];

type Options = BenchArgs & { only?: BenchName; engine: EngineBenchOptions; driftWindowS?: number; rounds?: number; losses?: number; pipelines?: number };

const USAGE =
  'usage: npm run bench -- [--runs N] [--only eq|loudnorm|resampler|engine|scale|drift|clockcpu|cost|lateness|failover|overview|control] [--cache-dir DIR] [--plugin-path DIR] [--duration S] ' +
  ENGINE_USAGE.replace('[--only engine|scale] ', '') + ' [--drift-window S] [--losses N] [--pipelines N]';

/** A whole number within [min, max] for `flag`, or an error naming the flag. */
function wholeNumber(flag: string, v: string, min: number, max: number): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${flag} must be a whole number ${min}-${max}, not ${v}\n${USAGE}`);
  return n;
}

function parseArgs(argv: string[]): Options {
  let only: BenchName | undefined;
  let driftWindowS: number | undefined;
  let rounds: number | undefined;
  let losses: number | undefined;
  let pipelines: number | undefined;
  const engine: EngineBenchOptions = {};
  const common = parseBenchArgs(argv, {
    valueHint: `\n${USAGE}`,
    unknown: (a) => `unknown argument ${a}\n${USAGE}`,
    runs: (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) throw new Error(`--runs must be a whole number >= 1\n${USAGE}`);
      return n;
    },
    extra: (a, value) => {
      if (a === '--only') {
        const v = value();
        const name = BENCH_NAMES.find((b) => b === v);
        if (name === undefined) throw new Error(`--only ${BENCH_NAMES.join('|')}, not ${v}\n${USAGE}`);
        only = name;
        return true;
      }
      if (a === '--drift-window') {
        const w = Number(value());
        if (!(w >= 10 && w <= 7200)) throw new Error(`--drift-window takes seconds, 10-7200\n${USAGE}`);
        driftWindowS = w;
        return true;
      }
      if (a === '--rounds') {
        rounds = wholeNumber('--rounds', value(), 1, 20);
        return true;
      }
      if (a === '--pipelines') {
        pipelines = wholeNumber('--pipelines', value(), 1, 256);
        return true;
      }
      if (a === '--losses') {
        losses = wholeNumber('--losses', value(), 1, 100);
        return true;
      }
      if (engineBenchFlag(a, value, engine)) return true;
      if (a === '--help' || a === '-h') {
        process.stdout.write(`${USAGE}\n`);
        process.exit(0);
      }
      return false;
    },
  });
  if (engine.quick === true) {
    common.runs ??= 2;
    common.durationS ??= 60;
  }
  if (engine.quick === true) driftWindowS ??= 60;
  return { ...common, only, engine, driftWindowS, rounds, losses, pipelines };
}

const EQ_ORDER: readonly EqBenchCaseName[] = ['parametriceq', 'equalizer-nbands', 'floor'];

function fmt(x: number, digits = 2): string {
  return Number.isFinite(x) ? x.toFixed(digits) : 'n/a';
}

function table(eq: EqBenchResult | undefined, ln: LoudnormBenchResult | undefined): string {
  if (eq === undefined && ln === undefined) return '';
  const lines = [
    '| bench | case | median CPU s (user+sys) | median wall s | x real time (CPU) | runs (CPU s) |',
    '|---|---|---:|---:|---:|---|',
  ];
  if (eq !== undefined) {
    for (const name of EQ_ORDER) {
      const c = eq.cases[name];
      lines.push(
        `| eq | ${name} | ${fmt(c.medianCpuS)} | ${fmt(c.medianWallS)} | ${fmt(eq.programme.durationS / c.medianCpuS, 0)} | ` +
          `${c.runs.map((r) => fmt(r.cpuS)).join(', ')} |`,
      );
    }
  }
  if (ln !== undefined) {
    for (const name of LOUDNORM_CASE_ORDER) {
      const c = ln.cases[name];
      lines.push(
        `| loudnorm | ${name} | ${fmt(c.medianCpuS)} | ${fmt(c.medianWallS)} | ${fmt(ln.programme.durationS / c.medianCpuS, 0)} | ` +
          `${c.runs.map((r) => fmt(r.cpuS)).join(', ')} |`,
      );
    }
  }
  lines.push('');
  if (eq !== undefined) {
    lines.push(
      `- eq: equalizer-nbands / parametriceq = **${fmt(eq.ratioNbandsOverParametriceq)}x** ` +
        `(net of the floor ${fmt(eq.ratioNbandsOverParametriceqNetOfFloor)}x); bands ${eq.bands}, ` +
        `${eq.programme.durationS} s F32 programme`,
    );
  }
  if (ln !== undefined) {
    lines.push(
      `- loudnorm: ffmpeg loudnorm / ours = **${fmt(ln.ratioFfmpegOverOurs, 1)}x** ` +
        `(net of the floor ${fmt(ln.ratioFfmpegOverOursNetOfFloor, 1)}x); ${ln.programme.durationS} s S16 programme`,
      `- loudness (ffmpeg ebur128 on each output): ${loudnormLoudnessLine(ln)}; input ` +
        `${fmt(ln.loudness.input.integratedLufs)} LUFS; true peak ours ${fmt(ln.loudness.ours.truePeakDbtp, 1)} dBTP, ` +
        `ffmpeg ${fmt(ln.loudness.ffmpeg.truePeakDbtp, 1)} dBTP (ceiling -1)`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const opts = parseArgs(process.argv.slice(2));
  const started = new Date();
  const eq = opts.only === undefined || opts.only === 'eq' ? await runEqBench(opts) : undefined;
  const ln = opts.only === undefined || opts.only === 'loudnorm' ? await runLoudnormBench(opts) : undefined;
  const rs: ResamplerBenchResult | undefined =
    opts.only === undefined || opts.only === 'resampler' ? await runResamplerBench(opts) : undefined;
  const engineParts = { engine: opts.only === undefined || opts.only === 'engine', scale: opts.only === undefined || opts.only === 'scale' };
  const engine: EngineBenchResult | undefined =
    engineParts.engine || engineParts.scale ? await runEngineBench({ ...opts.engine, scaleRounds: opts.engine.scaleRounds ?? opts.rounds, parts: engineParts, cacheDir: opts.cacheDir }) : undefined;

  const drift: ClockDriftResult | undefined =
    opts.only === undefined || opts.only === 'drift' ? await runClockDriftBench({ windowS: opts.driftWindowS, pluginPath: opts.pluginPath }) : undefined;

  process.stdout.write(`\n${table(eq, ln)}\n`);
  if (rs !== undefined) process.stdout.write(`\n${resamplerBenchMarkdown(rs)}\n`);
  if (engine !== undefined) process.stdout.write(`\n${engineTable(engine)}\n`);
  const clockCpu: ClockCpuResult | undefined =
    opts.only === undefined || opts.only === 'clockcpu' ? await runClockCpuBench({ windowS: opts.engine.quick === true ? 20 : 60, pluginPath: opts.pluginPath }) : undefined;
  if (drift !== undefined) process.stdout.write(`\n${clockDriftTable(drift)}\n`);
  if (clockCpu !== undefined) process.stdout.write(`\n${clockCpuTable(clockCpu)}\n`);
  const cost: CostResult | undefined =
    opts.only === undefined || opts.only === 'cost'
      ? await runCostBench({ windowS: opts.engine.windowS ?? (opts.engine.quick === true ? 15 : 30), rounds: opts.runs ?? 3, pluginPath: opts.pluginPath, cacheDir: opts.cacheDir })
      : undefined;
  if (cost !== undefined) process.stdout.write(`\n${costTable(cost)}\n`);
  const late: LatenessResult | undefined =
    opts.only === undefined || opts.only === 'lateness'
      ? await runLatenessBench({ windowS: opts.engine.windowS ?? (opts.engine.quick === true ? 20 : 60), pluginPath: opts.pluginPath, cacheDir: opts.cacheDir })
      : undefined;
  if (late !== undefined) process.stdout.write(`\n${latenessTable(late)}\n`);
  const failover: FailoverResult | undefined =
    opts.only === undefined || opts.only === 'failover'
      ? await runFailoverBench({
        rounds: opts.rounds ?? (opts.engine.quick === true ? 2 : 4), windowS: opts.engine.windowS ?? (opts.engine.quick === true ? 10 : 20), losses: opts.losses ?? (opts.engine.quick === true ? 5 : 20),
        pluginPath: opts.pluginPath, cacheDir: opts.cacheDir,
      })
      : undefined;
  if (failover !== undefined) process.stdout.write(`\n${failoverTable(failover)}\n`);
  const overview: OverviewBenchResult | undefined =
    opts.only === undefined || opts.only === 'overview'
      ? await runOverviewBench({ windowS: opts.engine.windowS ?? (opts.engine.quick === true ? 15 : 30), rounds: opts.rounds ?? (opts.engine.quick === true ? 1 : 2) })
      : undefined;
  if (overview !== undefined) process.stdout.write(`\n${overviewTable(overview)}\n`);
  const control: ControlPlaneResult | undefined =
    opts.only === undefined || opts.only === 'control'
      ? await runControlPlaneBench({ pipelines: opts.pipelines, windowS: opts.engine.windowS, rounds: opts.rounds ?? (opts.engine.quick === true ? 1 : 2) })
      : undefined;
  if (control !== undefined) process.stdout.write(`\n${controlPlaneTable(control)}\n`);

  const here = path.dirname(fileURLToPath(import.meta.url));
  const dir = path.join(here, 'results');
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, 'latest.json');
  // benches not run this time keep their section of the previous report
  const previous = await readFile(file, 'utf8')
    .then((t) => JSON.parse(t) as Record<string, unknown>)
    .catch((): Record<string, unknown> => ({}));
  const report: Record<string, unknown> = {
    startedAt: started.toISOString(),
    finishedAt: new Date().toISOString(),
    machine: { hostname: hostname(), cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.version },
    options: {
      runs: opts.runs ?? DEFAULT_RUNS,
      only: opts.only ?? 'all',
      durationS: opts.durationS ?? DEFAULT_DURATION_S,
      quick: opts.engine.quick === true,
    },
    eq: eq ?? null,
    loudnorm: ln ?? null,
    resampler: rs ?? null,
    engine: engine?.control ?? null,
    scale: engine?.scale ?? null,
    admission: engine?.admission ?? null,
    drift: drift ?? null,
    clockCpu: clockCpu ?? null,
    cost: cost ?? null,
    lateness: late ?? null,
    failover: failover ?? null,
    overview: overview ?? null,
    control: control ?? null,
    load: engine === undefined ? null : { before: engine.loadBefore, after: engine.loadAfter },
  };
  const kept: string[] = [];
  for (const key of ['eq', 'loudnorm', 'resampler', 'engine', 'scale', 'drift', 'clockCpu', 'cost', 'lateness', 'failover', 'overview', 'control'] as const) {
    const earlier = previous[key];
    if (report[key] === null && earlier !== undefined && earlier !== null) {
      report[key] = earlier;
      kept.push(key);
    }
  }
  if (kept.length > 0) report.keptFromPreviousReport = { sections: kept, startedAt: previous.startedAt ?? null };
  await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`\nJSON report: ${path.relative(process.cwd(), file)}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});
