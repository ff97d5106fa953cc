/**
 * Before/after of one cut (`npm run bench -- --only ab-cost`, or directly): the full graph of the
 * cost bench (bench/cost.ts) run twice or more side by side in each of two forms, A and B, all fed
 * by the one shared SRT sender, measured over the same window: CPU (user + system from
 * /proc/PID/stat) and `perf stat` (task-clock, context switches, system calls) of each child.
 * A and B differ in the plugin build they load (`--a-plugins`, `--b-plugins`: a build of the
 * commit before the cut and one of the cut) and/or in the argv (`--a-cut`, `--b-cut`: a named
 * rewrite of the compiler's argv, see CUTS). Counts of context switches and system calls do not
 * depend on the machine's other load the way CPU time does: they show a cut where the CPU figure
 * is within the noise of a shared machine.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { compilePipeline, type CompileOptions } from '../src/compiler/compile.js';
import { parsePipelineSpec } from '../src/spec/validate.js';
import { BENCH_PROCESSING } from './engine.js';
import { COST_COMPILE_OPTIONS } from './cost.js';
import { launchArgv, parseLaunch, replaced, withLevelElement, withoutProperty, withProperty, type LaunchElement } from './launch-graph.js';
import { killGroup, loadAverage, procCpuSeconds, programmeTs, ROOT, RtpCounters, rtpCounterBinary, Sender, sleep, stopAll } from './engine-harness.js';
import { freeTcpPort } from '../test/helpers/ports.js';
import { median, runIfMain, scriptFlags } from './process.js';

/** Named rewrites of the compiled graph (the argv of a form before a compiler change). */
export const CUTS: Record<string, (g: LaunchElement[]) => LaunchElement[]> = {
  none: (g) => g,
  // the bridge without its input meter (meter-interval)
  'no-meter': (g) => withoutProperty(g, 'bridge', 'meter-interval'),
  // the graph before the bridge metered its output: GStreamer's level right after it
  'level-element': (g) => withLevelElement(g),
  // the bridge's chunk 8 or 20 ms, the sends as they were (rtpbatch lists 4 packets, udpsink waits
  // for each list): what the per-chunk work of the output thread costs (docs/performance.md)
  chunk8: (g) => withProperty(g, 'bridge', 'chunk', '8000000'),
  chunk20: (g) => withProperty(g, 'bridge', 'chunk', '20000000'),
  // the converter before l24pack (docs/elements-l24pack.md)
  'audioconvert-out': (g) => replaced(g, 'outconvert', ['audioconvert', 'name=outconvert']),
};

const PERF_EVENTS = ['task-clock', 'context-switches', 'raw_syscalls:sys_enter'];

interface Child {
  form: 'A' | 'B';
  child: ChildProcess;
  rtpIndex: number;
}

export interface AbFigures {
  cpuPercent: number;
  /** per second of the window */
  perf: Record<string, number>;
  packetsPerS: number;
}

/** perf stat of one process for `seconds`: event -> count (or ms for task-clock) */
function perfStat(pid: number, seconds: number): Promise<Record<string, number>> {
  return new Promise((resolve) => {
    const p = spawn('perf', ['stat', '-x', ',', '-e', PERF_EVENTS.join(','), '-p', String(pid), '--', 'sleep', String(seconds)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    p.stderr?.on('data', (d: Buffer) => {
      err += d.toString();
    });
    p.on('error', () => resolve({}));
    p.on('exit', () => {
      const out: Record<string, number> = {};
      for (const line of err.split('\n')) {
        const f = line.split(',');
        const value = Number(f[0]);
        const event = f[2];
        if (event !== undefined && Number.isFinite(value)) out[event] = value;
      }
      resolve(out);
    });
  });
}

export async function runAb(opts: {
  aPlugins: string; bPlugins: string; aCut: string; bCut: string; pairs: number; windowS: number; settleS: number; options?: CompileOptions;
}): Promise<{ A: AbFigures[]; B: AbFigures[]; load: string }> {
  const cacheDir = path.join(tmpdir(), 'audioengine-bench');
  const [programme, counterBin] = await Promise.all([programmeTs(cacheDir), rtpCounterBinary(cacheDir)]);
  const n = opts.pairs * 2;
  const children: Child[] = [];
  const stoppers: { stop(): Promise<void> }[] = [];
  try {
    const srtPorts: number[] = [];
    for (let i = 0; i < n; i++) srtPorts.push(await freeTcpPort());
    const counters = await RtpCounters.start(counterBin, n);
    stoppers.push(counters);
    for (let i = 0; i < n; i++) {
      const form = i % 2 === 0 ? 'A' : 'B';
      const spec = parsePipelineSpec({
        name: 'ab', input: { type: 'srt', port: srtPorts[i], latency: 300 }, processing: BENCH_PROCESSING,
        output: { type: 'rtp', host: '127.0.0.1', port: counters.ports[i] },
      });
      const cut = CUTS[form === 'A' ? opts.aCut : opts.bCut];
      if (cut === undefined) throw new Error(`no cut named ${form === 'A' ? opts.aCut : opts.bCut}: ${Object.keys(CUTS).join(', ')}`);
      const argv = launchArgv(cut(parseLaunch(compilePipeline(spec, opts.options ?? COST_COMPILE_OPTIONS))));
      const env = { ...process.env, GST_PLUGIN_PATH: form === 'A' ? opts.aPlugins : opts.bPlugins };
      const child = spawn('gst-launch-1.0', argv, { env, stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'], detached: true });
      child.on('error', () => undefined);
      child.stdout?.resume();
      if (child.stderr !== null) createInterface({ input: child.stderr }).on('line', (l) => process.stderr.write(`${form}${i}: ${l}\n`));
      children.push({ form, child, rtpIndex: i });
    }
    await sleep(2000);
    const sender = Sender.start('gst-shared', programme, srtPorts, await freeTcpPort());
    stoppers.push(sender);
    await sleep(opts.settleS * 1000);
    const pids = children.map((c) => c.child.pid ?? 0);
    const t0 = performance.now();
    const before = await Promise.all(pids.map((p) => procCpuSeconds(p)));
    await counters.reset();
    const perf = await Promise.all(pids.map((p) => perfStat(p, opts.windowS)));
    const after = await Promise.all(pids.map((p) => procCpuSeconds(p)));
    const w = (performance.now() - t0) / 1000;
    const snap = await counters.snapshot();
    const figures = children.map((c, i): AbFigures => ({
      cpuPercent: (((after[i] ?? 0) - (before[i] ?? 0)) / w) * 100,
      perf: Object.fromEntries(Object.entries(perf[i] ?? {}).map(([k, v]) => [k, v / opts.windowS])),
      packetsPerS: (snap.sockets[c.rtpIndex]?.packets ?? 0) / snap.windowS,
    }));
    return {
      A: figures.filter((_, i) => children[i]?.form === 'A'),
      B: figures.filter((_, i) => children[i]?.form === 'B'),
      load: await loadAverage(),
    };
  } finally {
    for (const c of children) killGroup(c.child.pid, 'SIGKILL');
    await stopAll(stoppers);
  }
}

const USAGE = 'usage: node --import=tsx bench/ab-cost.ts [--a-plugins DIR] [--b-plugins DIR] [--a-cut NAME] [--b-cut NAME] [--pairs N] [--window S] [--settle S]\n';

runIfMain(import.meta.url, 'ab-cost', async () => {
  const flags = scriptFlags(USAGE);
  if (flags === undefined) return;
  const arg = flags.text;
  const build = path.join(ROOT, 'gst-plugins', 'build');
  const r = await runAb({
    aPlugins: path.resolve(arg('--a-plugins') ?? build), bPlugins: path.resolve(arg('--b-plugins') ?? build),
    aCut: arg('--a-cut') ?? 'none', bCut: arg('--b-cut') ?? 'none',
    pairs: Number(arg('--pairs') ?? 2), windowS: Number(arg('--window') ?? 30), settleS: Number(arg('--settle') ?? 8),
  });
  const f = (xs: AbFigures[], get: (x: AbFigures) => number | undefined, d = 2): string => {
    const v = xs.map(get).filter((x): x is number => x !== undefined);
    return `${median(v).toFixed(d)} (${v.map((x) => x.toFixed(d)).join(', ')})`;
  };
  const rows: [string, (x: AbFigures) => number | undefined, number][] = [
    ['CPU % of a core (/proc utime+stime)', (x) => x.cpuPercent, 2],
    ['task-clock ms/s (perf)', (x) => x.perf['task-clock'], 1],
    ['context switches/s (perf)', (x) => x.perf['context-switches'], 0],
    ['system calls/s (perf raw_syscalls:sys_enter)', (x) => x.perf['raw_syscalls:sys_enter'], 0],
    ['RTP packets/s', (x) => x.packetsPerS, 0],
  ];
  process.stdout.write([
    `A: ${arg('--a-plugins') ?? build} ${arg('--a-cut') ?? 'none'}; B: ${arg('--b-plugins') ?? build} ${arg('--b-cut') ?? 'none'}; median (each child)`,
    '| figure | A | B |', '|---|---|---|',
    ...rows.map(([name, get, d]) => `| ${name} | ${f(r.A, get, d)} | ${f(r.B, get, d)} |`),
    `load average after: ${r.load}`, '',
  ].join('\n'));
});
