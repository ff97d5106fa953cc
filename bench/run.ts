/**
 * `npm run bench`: the DSP benchmarks of our GStreamer elements.
 *
 *   npm run bench -- [--runs N] [--only eq|loudnorm] [--cache-dir DIR] [--plugin-path DIR] [--duration S]
 *
 * Runs bench/dsp-eq.ts (parametriceq vs equalizer-nbands) and bench/dsp-loudnorm.ts (loudnorm vs
 * ffmpeg loudnorm, with the loudness each delivers), prints one markdown table and writes the
 * whole result as JSON to bench/results/latest.json. It reports ratios and never asserts a
 * timing: the exit code is 0 unless a benchmark could not run.
 */
import { mkdir, writeFile } from 'node:fs/promises';
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
import { DEFAULT_DURATION_S, DEFAULT_RUNS, parseBenchArgs, type BenchArgs } from './process.js';

type BenchName = 'eq' | 'loudnorm';

type Options = BenchArgs & { only?: BenchName };

const USAGE = 'usage: npm run bench -- [--runs N] [--only eq|loudnorm] [--cache-dir DIR] [--plugin-path DIR] [--duration S]';

function parseArgs(argv: string[]): Options {
  let only: BenchName | undefined;
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
        if (v !== 'eq' && v !== 'loudnorm') throw new Error(`--only eq or --only loudnorm, not ${v}\n${USAGE}`);
        only = v;
        return true;
      }
      if (a === '--help' || a === '-h') {
        process.stdout.write(`${USAGE}\n`);
        process.exit(0);
      }
      return false;
    },
  });
  return { ...common, only };
}

const EQ_ORDER: readonly EqBenchCaseName[] = ['parametriceq', 'equalizer-nbands', 'floor'];

function fmt(x: number, digits = 2): string {
  return Number.isFinite(x) ? x.toFixed(digits) : 'n/a';
}

function table(eq: EqBenchResult | undefined, ln: LoudnormBenchResult | undefined): string {
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

  process.stdout.write(`\n${table(eq, ln)}\n`);

  const here = path.dirname(fileURLToPath(import.meta.url));
  const dir = path.join(here, 'results');
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, 'latest.json');
  const report = {
    startedAt: started.toISOString(),
    finishedAt: new Date().toISOString(),
    machine: { hostname: hostname(), cpus: cpus().length, cpuModel: cpus()[0]?.model ?? 'unknown', node: process.version },
    options: { runs: opts.runs ?? DEFAULT_RUNS, only: opts.only ?? 'all', durationS: opts.durationS ?? DEFAULT_DURATION_S },
    eq: eq ?? null,
    loudnorm: ln ?? null,
  };
  await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`\nJSON report: ${path.relative(process.cwd(), file)}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`bench: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});
