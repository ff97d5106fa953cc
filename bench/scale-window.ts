/**
 * What both kinds of the scale bench (the engine's step in bench/engine.ts, the ffmpeg reference's
 * in bench/scale-reference.ts) share, so that they are measured and judged the same way: the wait
 * until every receiver gets RTP, the window over the rig (the senders' CPU, the RTP counter's
 * CPU and counts, this node process's CPU), each pipeline's RTP figures from the counter, and
 * the real-time judgement (the reasons list: empty is real time).
 */
import { performance } from 'node:perf_hooks';
import { procCpuSeconds, sleep, type RtpCounters, type RtpSnapshot } from './engine-harness.js';
import { median } from './process.js';

/** What the RTP counter saw of one pipeline over the window. */
export interface RtpWindowSample {
  rtpPackets: number;
  rtpGaps: number;
  /** datagrams the kernel dropped on the counter's socket (counted as gaps too: its own fault) */
  rtpCounterDrops: number;
  rtpRatePerS: number;
  /** inserted silence in the RTP audio over the window (the programme never is silent), ms, and its runs */
  silentMs: number;
  silences: number;
}

/** One pipeline as judged: its RTP, and what its kind can tell of its input and process. */
export interface JudgedPipeline extends RtpWindowSample {
  /** SRT packets lost / dropped in the window (the engine's metrics; unknown for ffmpeg) */
  srtLost?: number;
  srtDropped?: number;
  /** the clock bridge's underruns (the engine only) */
  underruns?: number;
  /** child restarts by the engine's supervisor */
  restarts?: number;
  /** the pipeline's own process ended before the window did (a reference process: nothing restarts it) */
  ended?: boolean;
  /** the last line it wrote on stderr, when it ended */
  lastError?: string;
}

/** The processes around the pipelines, for the reasons. */
export interface JudgedRig {
  /** the sender processes: one not alive ended before the window did (its last stderr line quoted) */
  senders: readonly { alive: boolean; lastError: string }[];
  /** what the engine said of the pipelines that restarted (`3x "message"`, most frequent first) */
  restartsSaid?: readonly string[];
}

/** `n what` and, when there are any, up to two of the messages quoted in parentheses. */
function withWhy(what: string, messages: readonly string[]): string {
  const why = [...new Set(messages.filter((m) => m !== ''))].slice(0, 2);
  return why.length > 0 ? `${what} (${why.map((m) => `"${m}"`).join('; ')})` : what;
}

/** The counter's figures of the socket on `port` (zeros when it has none). */
export function rtpWindowSample(snapshot: RtpSnapshot, port: number): RtpWindowSample {
  const rtp = snapshot.sockets.find((c) => c.port === port) ?? { packets: 0, gaps: 0, drops: 0, silent_frames: 0, silences: 0 };
  return {
    rtpPackets: rtp.packets,
    rtpGaps: rtp.gaps,
    rtpCounterDrops: rtp.drops,
    rtpRatePerS: rtp.packets / snapshot.windowS,
    silentMs: rtp.silent_frames / 48,
    silences: rtp.silences,
  };
}

/**
 * Why the pipelines were not real time (empty: they were). Real time = every pipeline: no RTP
 * sequence gap, 1000 +- 20 RTP packets/s, no inserted silence, no SRT packet lost or dropped, no
 * underrun, no restart, its process alive, and every sender process still playing.
 */
export function realTimeReasons(pipelines: readonly JudgedPipeline[], rig: JudgedRig): string[] {
  const reasons: string[] = [];
  const sum = (pick: (p: JudgedPipeline) => number): number => pipelines.reduce((a, p) => a + Math.max(0, pick(p)), 0);
  const gaps = sum((p) => p.rtpGaps);
  const counterDrops = sum((p) => p.rtpCounterDrops);
  if (gaps > 0) {
    reasons.push(
      `${gaps} RTP sequence gap(s) in ${pipelines.filter((p) => p.rtpGaps > 0).length} pipeline(s)` +
        (counterDrops > 0 ? ` (the counter's sockets dropped ${counterDrops} datagram(s))` : ''),
    );
  }
  const rates = pipelines.map((p) => p.rtpRatePerS);
  const slow = pipelines.filter((p) => Math.abs(p.rtpRatePerS - 1000) > 20);
  if (slow.length > 0) reasons.push(`${slow.length} pipeline(s) off 1000 RTP packets/s by > 2 % (min ${Math.min(...rates).toFixed(0)}/s)`);
  // Real time is judged by the audio: 1000 packets a second that carry inserted silence are not.
  const silent = pipelines.filter((p) => p.silences > 0);
  if (silent.length > 0) {
    reasons.push(`inserted silence in ${silent.length} pipeline(s) (${silent.reduce((a, p) => a + p.silentMs, 0).toFixed(0)} ms in all, at most ${Math.max(...silent.map((p) => p.silentMs)).toFixed(0)} ms in one)`);
  }
  const underran = pipelines.filter((p) => (p.underruns ?? 0) > 0);
  if (underran.length > 0) reasons.push(`${sum((p) => p.underruns ?? 0)} underrun(s) in ${underran.length} pipeline(s)`);
  const lost = sum((p) => p.srtLost ?? 0);
  const dropped = sum((p) => p.srtDropped ?? 0);
  if (lost > 0) reasons.push(`${lost} SRT packet(s) lost`);
  if (dropped > 0) reasons.push(`${dropped} SRT packet(s) dropped`);
  const restarts = sum((p) => p.restarts ?? 0);
  const said = rig.restartsSaid ?? [];
  if (restarts > 0) reasons.push(`${restarts} child restart(s)${said.length > 0 ? ` (the engine said: ${said.join('; ')})` : ''}`);
  const ended = pipelines.filter((p) => p.ended === true);
  if (ended.length > 0) reasons.push(withWhy(`${ended.length} pipeline process(es) ended before the window did`, ended.map((p) => p.lastError ?? '')));
  const dead = rig.senders.filter((x) => !x.alive);
  if (dead.length > 0) reasons.push(withWhy(`${dead.length} sender process(es) ended before the window did`, dead.map((x) => x.lastError)));
  return reasons;
}

/** The figures of one N that both kinds report. */
export interface ScaleStepFigures {
  n: number;
  /** which round at this N (1-based; a sweep runs `rounds` of each N) */
  round?: number;
  windowS: number;
  realTime: boolean;
  /** why not, when not */
  reasons: string[];
  /** per pipeline (an engine child, or one reference process), % of a core */
  pipelineCpuPct: { median: number; max: number; sum: number };
  pipelineRssMiB: { median: number; max: number };
  /** every sender process together, and that sum / N (per pipeline fed, whatever the processes) */
  senderCpuPct: { perSender: number; sum: number; processes: number };
  /** the RTP receivers: the rtp-counter process (all N sockets) */
  receiversCpuPct: number;
  /** this node process: the bench itself (engine logs, metrics, the counter's answers) */
  benchCpuPct: number;
  /**
   * what the pipelines, the engine (for the engine's steps), the senders, the receivers and this
   * process used, in % of all cores (100 = both cores busy); /proc/stat's machine-wide counters
   * are not usable in this VM
   */
  accountedPctOfMachine: number;
  /** rates over the counter's own window (its clock, from reset to snapshot) */
  rtp: { totalGaps: number; counterDrops: number; minRatePerS: number; maxRatePerS: number };
  /** ms from the step's start to every receiver carrying the programme (a sample that is not 0) */
  flowingMs: number;
  loadBefore: string;
}

/** Why a step whose counter stopped answering is not real time. */
export const COUNTER_UNANSWERED_REASON = 'the RTP counter stopped answering (starved on a saturated host): the window was not measured';

/**
 * The figures of a step whose window could not be measured (CounterUnanswered): judged not real
 * time for that reason, every figure NaN (n/a in the tables, null in the JSON).
 */
export function unmeasuredFigures(n: number, loadBefore: string): ScaleStepFigures {
  const none = Number.NaN;
  return {
    n,
    windowS: none,
    realTime: false,
    reasons: [COUNTER_UNANSWERED_REASON],
    pipelineCpuPct: { median: none, max: none, sum: none },
    pipelineRssMiB: { median: none, max: none },
    senderCpuPct: { perSender: none, sum: none, processes: 0 },
    receiversCpuPct: none,
    benchCpuPct: none,
    accountedPctOfMachine: none,
    rtp: { totalGaps: none, counterDrops: none, minRatePerS: none, maxRatePerS: none },
    flowingMs: none,
    loadBefore,
  };
}

/**
 * The sweep of one kind, or of two side by side: at each N of `ns` (ascending) `rounds` rounds,
 * each `first`'s step then `second`'s (when given), so both kinds meet the same host in turn.
 * A kind is whole at N only when every one of its rounds there was real time; it stops after its
 * first N that is not, the other goes on.
 */
export async function sweepSideBySide<A extends { realTime: boolean }, B extends { realTime: boolean }>(
  ns: readonly number[],
  first: (n: number, round: number) => Promise<A>,
  second: ((n: number, round: number) => Promise<B>) | null,
  rounds = 1,
): Promise<{ first: A[]; second: B[] }> {
  const out: { first: A[]; second: B[] } = { first: [], second: [] };
  let firstOn = true;
  let secondOn = second !== null;
  for (const n of ns) {
    if (!firstOn && !secondOn) break;
    let firstWhole: boolean = firstOn;
    let secondWhole: boolean = secondOn;
    for (let round = 1; round <= rounds; round++) {
      if (firstOn) {
        const step = await first(n, round);
        out.first.push(step);
        firstWhole &&= step.realTime;
      }
      if (secondOn && second !== null) {
        const step = await second(n, round);
        out.second.push(step);
        secondWhole &&= step.realTime;
      }
    }
    firstOn = firstWhole;
    secondOn = secondWhole;
  }
  return out;
}

/** The N of a sweep at which every round was real time, ascending. */
export function wholeNs(steps: readonly { n: number; realTime: boolean }[]): number[] {
  const ns = [...new Set(steps.map((x) => x.n))].sort((a, b) => a - b);
  return ns.filter((n) => steps.filter((x) => x.n === n).every((x) => x.realTime));
}

/**
 * Largest N of a sweep at which every round was real time (0 when none), and whether it stopped
 * before the last N of `ns`.
 */
export function sweepEnd(steps: readonly { n: number; realTime: boolean }[], ns: readonly number[]): { largestRealTimeN: number; stoppedEarly: boolean } {
  const ok = wholeNs(steps);
  return { largestRealTimeN: ok.at(-1) ?? 0, stoppedEarly: (steps.at(-1)?.n ?? 0) !== ns.at(-1) };
}

/** Median, max and sum of one figure over a step's pipelines. */
export function spread(values: readonly number[]): { median: number; max: number; sum: number } {
  return { median: median([...values]), max: Math.max(...values), sum: values.reduce((a, b) => a + b, 0) };
}

/** The RTP totals of the pipelines in one step. */
export function rtpTotals(pipelines: readonly RtpWindowSample[]): { totalGaps: number; counterDrops: number; minRatePerS: number; maxRatePerS: number } {
  const rates = pipelines.map((p) => p.rtpRatePerS);
  return {
    totalGaps: pipelines.reduce((a, p) => a + p.rtpGaps, 0),
    counterDrops: pipelines.reduce((a, p) => a + p.rtpCounterDrops, 0),
    minRatePerS: Math.min(...rates),
    maxRatePerS: Math.max(...rates),
  };
}

/**
 * Waits (200 ms polls, up to `timeoutMs`) until every receiver carries the programme: a frame
 * with a sample that is not 0 (an engine's pipeline sends silence on its own clock from the
 * moment it runs, so packets alone do not say the audio has come). Returns how many receivers
 * had none when the time ran out (0: the programme at all of them).
 */
export async function waitForAudio(counters: RtpCounters, timeoutMs: number, firstAudio?: Map<number, number>): Promise<number> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const sockets = (await counters.snapshot()).sockets;
    const now = performance.now();
    for (const c of sockets) if (c.audio_frames > 0 && firstAudio !== undefined && !firstAudio.has(c.port)) firstAudio.set(c.port, now);
    const waiting = sockets.filter((c) => c.audio_frames === 0).length;
    if (waiting === 0 || now > until) return waiting;
    await sleep(200);
  }
}

/** The rig's side of one window: the counter's snapshot and the CPU of senders, counter and bench. */
export interface RigWindow {
  /** the bench's wall clock from before the counter's reset to after its snapshot, s */
  windowS: number;
  snapshot: RtpSnapshot;
  /** every sender process together, % of a core */
  senderCpuPct: number;
  receiversCpuPct: number;
  benchCpuPct: number;
}

/**
 * Opens a window over the rig: reads the senders' and the counter's CPU and this process's, starts
 * the wall clock (before the reset: its answer can be late on a saturated machine), resets the
 * counter. `close()` takes the counter's snapshot, then the CPU readings again.
 */
export async function openRigWindow(senderPids: readonly (number | undefined)[], counters: RtpCounters): Promise<{ startedAt: number; close: () => Promise<RigWindow> }> {
  const sender0 = await Promise.all(senderPids.map((pid) => procCpuSeconds(pid)));
  const receivers0 = await procCpuSeconds(counters.pid);
  const bench0 = process.cpuUsage();
  const w0 = performance.now();
  await counters.reset();
  return {
    startedAt: w0,
    close: async () => {
      const snapshot = await counters.snapshot();
      const windowS = (performance.now() - w0) / 1000;
      const bench = process.cpuUsage(bench0);
      const receivers1 = await procCpuSeconds(counters.pid);
      const sender1 = await Promise.all(senderPids.map((pid) => procCpuSeconds(pid)));
      const senderCpuS = sender1.reduce((a, v, i) => a + v - (sender0[i] ?? 0), 0);
      return {
        windowS,
        snapshot,
        senderCpuPct: (100 * senderCpuS) / windowS,
        receiversCpuPct: (100 * (receivers1 - receivers0)) / windowS,
        benchCpuPct: (100 * (bench.user + bench.system)) / 1e6 / windowS,
      };
    },
  };
}
