/**
 * Where one pipeline's CPU goes (`npm run bench -- --only cost`): the engine's graph for the
 * scale bench's shape (loudness-normalize -23 + 3-band EQ, AAC in MPEG-TS over SRT, RTP L24 1 ms
 * to 127.0.0.1, the engine's default compile options) and variants of it with one stage removed
 * or replaced, all side by side in one run, fed by one shared SRT sender (the scale bench's
 * `gst-shared`), with a second copy of the full graph (the noise figure) and a minimal C sender
 * (bench/floor-sender.c) as the floor. Every variant is cut out of the compiler's own argv
 * (src/compiler/compile.ts) by element name, so none can drift from what the engine runs. CPU of
 * each process (user + system, /proc/PID/stat) over the same window, in % of a core; each
 * RTP-sending variant's packets are counted by bench/rtp-counter.c to show it flowed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { compilePipeline, type CompileOptions } from '../src/compiler/compile.js';
import { parsePipelineSpec } from '../src/spec/validate.js';
import { CUT_SINK, cutAfter, cutAfterIndex, indexOf, launchArgv, parseLaunch, replaced, without, withoutProperty, type LaunchElement } from './launch-graph.js';
import {
  BENCH_PROCESSING, benchBinary, killGroup, loadAverage, procCpuSeconds, programmeTs, ROOT, RtpCounters, rtpCounterBinary, Sender, sleep, stopAll,
} from './engine-harness.js';
import { freeTcpPort } from '../test/helpers/ports.js';
import { median, runIfMain, scriptFlags } from './process.js';

export const FLOOR_SENDER_SOURCE = path.join(ROOT, 'bench', 'floor-sender.c');

/** The engine's defaults (config.toml): what a pipeline of this shape runs with. */
export const COST_COMPILE_OPTIONS: CompileOptions = {
  statsIntervalMs: 1000, meterIntervalMs: 100, packetsPerSend: 4, clockSource: 'tai', jitterMs: 50,
};

export interface CostVariant {
  name: string;
  what: string;
  argv: string[];
  /** it sends RTP to the counter */
  sendsRtp: boolean;
}

/**
 * The graphs of one round: the full graph and each cut, from the compiler's argv for SRT port
 * `srtPort(i)` (the i-th graph) and RTP port `rtpPort(k)` (the k-th graph that still sends).
 */
export function costVariants(srtPort: (i: number) => number, rtpPort: (i: number) => number, options = COST_COMPILE_OPTIONS): CostVariant[] {
  const compiled = (i: number, rtpIndex: number): LaunchElement[] => {
    const spec = parsePipelineSpec({
      name: 'cost', input: { type: 'srt', port: srtPort(i), latency: 300 },
      processing: BENCH_PROCESSING,
      // the variants that send nothing keep the full graph's output until it is cut away
      output: { type: 'rtp', host: '127.0.0.1', port: rtpPort(Math.max(0, rtpIndex)) },
    });
    return parseLaunch(compilePipeline(spec, options));
  };
  const cuts: { name: string; what: string; cut: (g: LaunchElement[]) => LaunchElement[]; sendsRtp: boolean }[] = [
    { name: 'full', what: 'the full graph (the compiler\'s argv)', cut: (g) => g, sendsRtp: true },
    { name: 'twin', what: 'a second copy of the full graph (the noise figure)', cut: (g) => g, sendsRtp: true },
    { name: 'input', what: 'SRT receive + demux + AAC decode only (srtsrc .. decodebin ! fakesink)', cut: (g) => cutAfter(g, 'decode', CUT_SINK), sendsRtp: false },
    {
      name: 'input+convert', what: 'the input + audioconvert + audioresample to F32 48 kHz (everything before the bridge) ! fakesink',
      cut: (g) => cutAfterIndex(g, indexOf(g, 'bridge') - 1, CUT_SINK), sendsRtp: false,
    },
    { name: 'to-bridge', what: 'everything up to the clock bridge, its output ! fakesink', cut: (g) => cutAfter(g, 'bridge', CUT_SINK), sendsRtp: false },
    { name: 'no-meter', what: 'the full graph without the input meter (the bridge without `meter-interval`)', cut: (g) => withoutProperty(g, 'bridge', 'meter-interval'), sendsRtp: true },
    { name: 'no-loudnorm', what: 'the full graph without `loudnorm` (step0)', cut: (g) => without(g, 'step0'), sendsRtp: true },
    { name: 'no-eq', what: 'the full graph without `parametriceq` (step1)', cut: (g) => without(g, 'step1'), sendsRtp: true },
    {
      name: 'no-convert-pay', what: 'convert + payload + send removed: the last step ! fakesink',
      cut: (g) => cutAfter(g, 'step1', CUT_SINK), sendsRtp: false,
    },
    { name: 'no-send', what: 'udpsink replaced by fakesink (the packets are made, not sent; no wait on the clock)', cut: (g) => replaced(g, 'out', CUT_SINK), sendsRtp: false },
  ];
  let rtp = 0;
  return cuts.map((c, i) => ({
    name: c.name, what: c.what, argv: launchArgv(c.cut(compiled(i, c.sendsRtp ? rtp++ : -1))), sendsRtp: c.sendsRtp,
  }));
}

// ---------------------------------------------------------------------------------------------
// one round

export interface CostRoundEntry {
  name: string;
  percent: number;
  /** RTP packets per second the counter received from it (null: it sends none) */
  packetsPerS: number | null;
}

export interface CostRound {
  windowS: number;
  entries: CostRoundEntry[];
  floorRealtime: boolean;
}

export interface CostResult {
  windowS: number;
  rounds: CostRound[];
  variants: { name: string; what: string; argv: string[] }[];
  /** per variant, the median over rounds, % of a core */
  median: Record<string, number>;
  /** median over rounds of |full - twin| */
  medianTwinPoints: number;
  floorSender: { command: string[]; realtime: boolean };
  sender: string[];
  /** /proc/loadavg (1, 5, 15 min) before and after: the machine's other load */
  load: { before: string; after: string };
}

interface Running {
  name: string;
  child: ChildProcess;
  rtpIndex: number | null;
  stderr: string[];
}

function startChild(name: string, cmd: string, args: string[], env: NodeJS.ProcessEnv, rtpIndex: number | null): Running {
  // fds 3 and 4 as the supervisor gives them (the passphrase pipe, none here, and the control channel)
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'], detached: true });
  child.on('error', () => undefined);
  child.stdout?.resume(); // -m messages, read (and dropped) as the engine reads them
  const stderr: string[] = [];
  if (child.stderr !== null) createInterface({ input: child.stderr }).on('line', (l) => stderr.length < 20 && stderr.push(l));
  return { name, child, rtpIndex, stderr };
}

const alive = (c: ChildProcess): boolean => c.exitCode === null && c.signalCode === null;

async function costRound(opts: { windowS: number; settleS: number; pluginPath: string; cacheDir: string; programme: string; counter: string; floorBin: string },
  log: (l: string) => void): Promise<{ round: CostRound; variants: CostVariant[]; sender: string[]; floorCommand: string[] }> {
  const running: Running[] = [];
  const stoppers: { stop(): Promise<void> }[] = [];
  try {
    const n = 10;
    const srtPorts: number[] = [];
    for (let i = 0; i < n; i++) srtPorts.push(await freeTcpPort());
    const counters = await RtpCounters.start(opts.counter, n);
    stoppers.push(counters);
    const variants = costVariants((i) => srtPorts[i] ?? 0, (i) => counters.ports[i] ?? 0);
    const env = { ...process.env, GST_PLUGIN_PATH: opts.pluginPath };
    let rtp = 0;
    for (const v of variants) {
      const [cmd, ...args] = ['gst-launch-1.0', ...v.argv];
      running.push(startChild(v.name, cmd ?? 'false', args, env, v.sendsRtp ? rtp++ : null));
    }
    const floorCommand = [opts.floorBin, '127.0.0.1', String(counters.ports[rtp] ?? 0)];
    const floorRtp = rtp;
    const floor = spawn(floorCommand[0] ?? 'false', floorCommand.slice(1), { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    floor.on('error', () => undefined);
    const floorHello = new Promise<string>((resolve) => {
      if (floor.stdout === null) resolve('{}');
      else createInterface({ input: floor.stdout }).once('line', resolve);
    });
    running.push({ name: 'floor', child: floor, rtpIndex: floorRtp, stderr: [] });
    await sleep(2000);
    const localPort = await freeTcpPort();
    const sender = Sender.start('gst-shared', opts.programme, variants.map((_, i) => srtPorts[i] ?? 0), localPort);
    stoppers.push(sender);
    await sleep(opts.settleS * 1000);
    for (const r of running) if (!alive(r.child)) throw new Error(`cost: ${r.name} ended before the window: ${r.stderr.join(' | ')}`);
    if (!sender.alive) throw new Error('cost: the SRT sender ended before the window');
    const pids = running.map((r) => r.child.pid);
    const t0 = performance.now();
    const before = await Promise.all(pids.map((p) => procCpuSeconds(p)));
    await counters.reset();
    await sleep(opts.windowS * 1000);
    const after = await Promise.all(pids.map((p) => procCpuSeconds(p)));
    const w = (performance.now() - t0) / 1000;
    const snap = await counters.snapshot();
    for (const r of running) if (!alive(r.child)) throw new Error(`cost: ${r.name} ended in the window: ${r.stderr.join(' | ')}`);
    const realtime = (JSON.parse(await floorHello) as { realtime?: boolean }).realtime === true;
    const entries = running.map((r, i) => {
      const sock = r.rtpIndex === null ? undefined : snap.sockets[r.rtpIndex];
      return {
        name: r.name,
        percent: (((after[i] ?? 0) - (before[i] ?? 0)) / w) * 100,
        packetsPerS: sock === undefined ? null : sock.packets / snap.windowS,
      };
    });
    log(`cost round: ${entries.map((e) => `${e.name} ${e.percent.toFixed(2)}`).join(', ')} (% of a core; floor SCHED_FIFO ${realtime})`);
    return { round: { windowS: w, entries, floorRealtime: realtime }, variants, sender: sender.command, floorCommand };
  } finally {
    for (const r of running) killGroup(r.child.pid, 'SIGKILL');
    await stopAll(stoppers);
    await Promise.all(running.filter((r) => alive(r.child)).map((r) => Promise.race([new Promise((res) => r.child.once('exit', res)), sleep(2000)])));
  }
}

export interface CostBenchOptions {
  windowS?: number;
  rounds?: number;
  settleS?: number;
  pluginPath?: string;
  cacheDir?: string;
  log?: (line: string) => void;
}

export async function runCostBench(options: CostBenchOptions = {}): Promise<CostResult> {
  const windowS = options.windowS ?? 30;
  const log = options.log ?? ((l: string) => process.stderr.write(`${l}\n`));
  const cacheDir = options.cacheDir ?? path.join(tmpdir(), 'audioengine-bench');
  const pluginPath = options.pluginPath ?? path.join(ROOT, 'gst-plugins', 'build');
  const [programme, counter, floorBin] = await Promise.all([
    programmeTs(cacheDir), rtpCounterBinary(cacheDir), benchBinary(FLOOR_SENDER_SOURCE, cacheDir),
  ]);
  const loadBefore = await loadAverage();
  const rounds: CostRound[] = [];
  let last: Awaited<ReturnType<typeof costRound>> | undefined;
  for (let i = 0; i < (options.rounds ?? 3); i++) {
    last = await costRound({ windowS, settleS: options.settleS ?? 8, pluginPath, cacheDir, programme, counter, floorBin }, log);
    rounds.push(last.round);
  }
  if (last === undefined) throw new Error('cost: no round');
  const names = rounds[0]?.entries.map((e) => e.name) ?? [];
  const med: Record<string, number> = {};
  for (const n of names) med[n] = median(rounds.map((r) => r.entries.find((e) => e.name === n)?.percent ?? NaN));
  const pct = (r: CostRound, n: string): number => r.entries.find((e) => e.name === n)?.percent ?? NaN;
  return {
    windowS,
    rounds,
    variants: last.variants.map((v) => ({ name: v.name, what: v.what, argv: v.argv })),
    median: med,
    medianTwinPoints: median(rounds.map((r) => Math.abs(pct(r, 'full') - pct(r, 'twin')))),
    floorSender: { command: last.floorCommand, realtime: rounds.every((r) => r.floorRealtime) },
    sender: last.sender,
    load: { before: loadBefore, after: await loadAverage() },
  };
}

/** What each stage costs: a graph with it minus the variant without it, in the same round. */
const STAGES: { stage: string; from: string; minus: string }[] = [
  { stage: 'SRT receive + demux + AAC decode', from: 'input', minus: '' },
  { stage: 'audioconvert + audioresample (input side)', from: 'input+convert', minus: 'input' },
  { stage: 'clock bridge (FIFO, resampler, output thread on the clock)', from: 'to-bridge', minus: 'input+convert' },
  { stage: 'the input meter (the bridge\'s `level` messages)', from: 'full', minus: 'no-meter' },
  { stage: '`loudnorm` (step0)', from: 'full', minus: 'no-loudnorm' },
  { stage: '`parametriceq` (step1)', from: 'full', minus: 'no-eq' },
  { stage: 'l24pack + rtpL24pay + rtpbatch (packets made)', from: 'no-send', minus: 'no-convert-pay' },
  { stage: 'udpsink (the send and its wait on the clock)', from: 'full', minus: 'no-send' },
];

export function costTable(r: CostResult): string {
  const f = (x: number | undefined): string => (x === undefined || !Number.isFinite(x) ? 'n/a' : x.toFixed(2));
  const m = (n: string): number => (n === '' ? 0 : (r.median[n] ?? NaN));
  const at = (x: CostRound, n: string): number => (n === '' ? 0 : (x.entries.find((e) => e.name === n)?.percent ?? NaN));
  // a stage: the median over rounds of the difference within each round (both graphs shared that round's machine)
  const stage = (from: string, minus: string): number => median(r.rounds.map((x) => at(x, from) - at(x, minus)));
  const pps = (n: string): string => {
    const xs = r.rounds.map((x) => x.entries.find((e) => e.name === n)?.packetsPerS).filter((x): x is number => typeof x === 'number');
    return xs.length === 0 ? '-' : xs.map((x) => x.toFixed(0)).join(', ');
  };
  return [
    `One pipeline (loudnorm -23 + 3-band EQ, AAC/MPEG-TS over SRT, RTP L24 1 ms) and its cuts side by side, ${r.rounds.length} rounds of ${r.windowS} s; CPU % of a core:`,
    '',
    '| graph | median | rounds | RTP packets/s |',
    '|---|---:|---|---|',
    ...[...r.variants.map((v) => ({ name: v.name, what: v.what })), { name: 'floor', what: `floor sender (bench/floor-sender.c${r.floorSender.realtime ? ', SCHED_FIFO' : ', not SCHED_FIFO'}): 4 RTP packets per sendmmsg every 4 ms of CLOCK_TAI` }]
      .map((v) => `| ${v.name}: ${v.what} | ${f(r.median[v.name])} | ${r.rounds.map((x) => f(x.entries.find((e) => e.name === v.name)?.percent)).join(', ')} | ${pps(v.name)} |`),
    '',
    'Where it goes (per round the difference of the two graphs, median over rounds; the noise figure applies to each):',
    '',
    '| stage | % of a core | rounds | from |',
    '|---|---:|---|---|',
    ...STAGES.map((s) => `| ${s.stage} | ${f(stage(s.from, s.minus))} | ${r.rounds.map((x) => f(at(x, s.from) - at(x, s.minus))).join(', ')} | ${s.from}${s.minus === '' ? '' : ` − ${s.minus}`} |`),
    `| floor: the floor sender + SRT receive and decode | ${f(m('floor') + m('input'))} | | floor + input |`,
    '',
    `- noise: the two copies of the full graph differ by ${f(r.medianTwinPoints)} points (median over rounds)`,
    `- full graph / floor (sender + input): ${(m('full') / (m('floor') + m('input'))).toFixed(1)}x`,
    `- load average before / after: ${r.load.before} / ${r.load.after}`,
  ].join('\n');
}

const USAGE = 'usage: node --import=tsx bench/cost.ts [--window S] [--rounds N] [--settle S] [--plugin-path DIR] [--cache-dir DIR]\n';

runIfMain(import.meta.url, 'cost', async () => {
  const flags = scriptFlags(USAGE);
  if (flags === undefined) return;
  const { text: arg, num } = flags;
  const r = await runCostBench({ windowS: num('--window'), rounds: num('--rounds'), settleS: num('--settle'), pluginPath: arg('--plugin-path'), cacheDir: arg('--cache-dir') });
  process.stdout.write(`\n${costTable(r)}\n\n${JSON.stringify(r, null, 2)}\n`);
});
