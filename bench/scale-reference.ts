/**
 * The scale bench's references (`--reference ffmpeg|floor|passthrough|no-bridge`): one step of N
 * reference pipelines in place of the engine's, fed by the same kind of sender, received by the
 * same RTP counter and judged by the same rule (bench/scale-window.ts).
 *
 * - `ffmpeg`: one ffmpeg process per pipeline doing the pipeline's job (bench/ffmpeg-pipeline.ts).
 * - `floor`: the least a host can do for a pipeline without doing its job, as the cost bench's
 *   floor (bench/cost.ts): the compiler's own graph cut after the decoder (SRT receive, demux,
 *   AAC decode into a fakesink; one gst-launch-1.0) plus bench/floor-sender.c sending 1000 RTP
 *   L24 packets a second on the clock, 4 per 4 ms (no audio work; a fixed non-zero payload). What
 *   the floor cannot carry on a host, no engine of this design can.
 * - `passthrough`: the least a pipeline of the engine's design costs: the compiler's own graph for
 *   the pipeline without processing steps and with `level` cut out (SRT receive, demux, AAC
 *   decode, the clock bridge, l24pack, rtpL24pay, rtpbatch, udpsink; one gst-launch-1.0). It
 *   carries the programme unprocessed, so the counter judges its audio as the engine's. What it
 *   cannot carry on a host, no saving in the steps or the meters can make the engine carry.
 * - `no-bridge`: the passthrough without the clock bridge: udpsink paces the packets on the
 *   input's own timestamps, as the engine did before the bridge. Its cost at scale against the
 *   passthrough's is the bridge's; what it cannot carry, no saving in the bridge, the steps or
 *   the meter can. The rule judges it more leniently than the others: without the bridge a late
 *   input makes late packets, not inserted silence, and the rule sees lateness only as a rate
 *   more than 2 % off over the window.
 *
 * Each pipeline's SRT listener is bound before the senders call. CPU and RSS of each pipeline's
 * processes (summed) from /proc/PID over the window. Every process started here is ended, process
 * group and all, also when the step fails.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { compilePipeline, type CompileOptions } from '../src/compiler/compile.js';
import { readProcessStats } from '../src/metrics/process-stats.js';
import { parsePipelineSpec } from '../src/spec/validate.js';
import { freeUdpPort } from '../test/helpers/ports.js';
import { CounterUnanswered, killGroup, loadAverage, RtpCounters, Sender, sleep, stopAll, type SenderKind } from './engine-harness.js';
import { ffmpegPipelineArgv, type FfmpegEqBand } from './ffmpeg-pipeline.js';
import { CUT_SINK, cutAfter, launchArgv, parseLaunch, without, withoutProperty } from './launch-graph.js';
import { openRigWindow, realTimeReasons, rtpTotals, rtpWindowSample, spread, unmeasuredFigures, waitForAudio, type RtpWindowSample, type ScaleStepFigures } from './scale-window.js';

/** What the scale bench can run beside the engine as its reference. */
export type ScaleReferenceKind = 'ffmpeg' | 'floor' | 'passthrough' | 'no-bridge';
export const SCALE_REFERENCE_KINDS: readonly ScaleReferenceKind[] = ['ffmpeg', 'floor', 'passthrough', 'no-bridge'];

/** What every step of a reference needs: the rig (shared with the engine's steps) and the job. */
export interface ReferenceScaleSetup {
  kind: ScaleReferenceKind;
  programme: string;
  counterBinary: string;
  sender: SenderKind;
  senderRate: number;
  settleS: number;
  windowS: number;
  /** the pipelines' job: SRT latency, loudness target, EQ bands (those of the engine's pipelines) */
  latencyMs: number;
  targetLufs: number;
  bands: readonly FfmpegEqBand[];
  /** floor: bench/floor-sender.c built (benchBinary), our elements' folder, the engine's compile options */
  floorSender: string;
  /** floor, passthrough, no-bridge: our elements' folder */
  pluginPath: string;
  compileOptions: CompileOptions;
  log: (line: string) => void;
}

export interface ReferenceScalePipelineSample extends RtpWindowSample {
  srtPort: number;
  rtpPort: number;
  cpuPct: number;
  rssMiB: number;
  /** a process of it ended before the window did */
  ended: boolean;
  /** its last stderr lines, when it wrote any */
  errors: string[];
}

/**
 * One N of a reference's sweep: the pipeline figures are per reference pipeline (its processes
 * summed); the reasons follow the engine's rule, without SRT loss (not read, see `srtStats`).
 */
export interface ReferenceScaleStep extends ScaleStepFigures {
  /** ms from the first process started to every SRT listener bound (flowingMs: to every receiver carrying the programme) */
  listeningMs: number;
  pipelines: ReferenceScalePipelineSample[];
}

/** Why the SRT figures of a reference are missing from its judgement. */
export function referenceSrtStats(kind: ScaleReferenceKind): string {
  switch (kind) {
    case 'ffmpeg': return "not read: ffmpeg's SRT input exposes no statistics (a loss shows only as a gap in the audio)";
    case 'floor': return 'not read: the floor sends a fixed payload, so a loss on its input does not reach the counter';
    case 'passthrough':
    case 'no-bridge': return 'not read: its statistics are not parsed here (a loss shows as a gap in the audio)';
  }
}

/** Ports that stand for SRT_PORT and RTP_PORT in a command shown (any valid port no other token contains). */
const SHOWN_SRT_PORT = 65001;
const SHOWN_RTP_PORT = 65002;

/** The floor's input: the compiler's graph for the engine's pipeline, cut after the decoder into a fakesink. */
export function floorInputArgv(setup: Pick<ReferenceScaleSetup, 'latencyMs' | 'compileOptions'>, srtPort: number): string[] {
  const spec = parsePipelineSpec({
    name: 'floor', input: { type: 'srt', port: srtPort, latency: setup.latencyMs },
    processing: [], output: { type: 'rtp', host: '127.0.0.1', port: SHOWN_RTP_PORT }, // cut away
  });
  return launchArgv(cutAfter(parseLaunch(compilePipeline(spec, setup.compileOptions)), 'decode', CUT_SINK));
}

/**
 * The passthrough: the compiler's graph for the engine's pipeline with no processing steps and
 * no input meter (the bridge without `meter-interval`), sending to `rtpPort`; `no-bridge`: that
 * without the clock bridge too.
 */
export function passthroughArgv(
  setup: Pick<ReferenceScaleSetup, 'kind' | 'latencyMs' | 'compileOptions'>, srtPort: number, rtpPort: number,
): string[] {
  const spec = parsePipelineSpec({
    name: 'passthrough', input: { type: 'srt', port: srtPort, latency: setup.latencyMs },
    processing: [], output: { type: 'rtp', host: '127.0.0.1', port: rtpPort },
  });
  const graph = withoutProperty(parseLaunch(compilePipeline(spec, setup.compileOptions)), 'bridge', 'meter-interval');
  return launchArgv(setup.kind === 'no-bridge' ? without(graph, 'bridge') : graph);
}

/** A command made for SHOWN_SRT_PORT and SHOWN_RTP_PORT, those ports shown as SRT_PORT and RTP_PORT. */
function shownPorts(argv: readonly string[]): string[] {
  return argv.map((a) => a.replaceAll(String(SHOWN_SRT_PORT), 'SRT_PORT').replaceAll(String(SHOWN_RTP_PORT), 'RTP_PORT'));
}

/** The commands of one reference pipeline, ports shown as SRT_PORT and RTP_PORT (for the report). */
export function referenceScaleCommands(setup: Pick<ReferenceScaleSetup, 'kind' | 'latencyMs' | 'targetLufs' | 'bands' | 'floorSender' | 'compileOptions'>): string[][] {
  if (setup.kind === 'floor') {
    return [shownPorts(['gst-launch-1.0', ...floorInputArgv(setup, SHOWN_SRT_PORT)]), [setup.floorSender, '127.0.0.1', 'RTP_PORT']];
  }
  if (setup.kind === 'passthrough' || setup.kind === 'no-bridge') {
    return [shownPorts(['gst-launch-1.0', ...passthroughArgv(setup, SHOWN_SRT_PORT, SHOWN_RTP_PORT)])];
  }
  return [['ffmpeg', ...ffmpegPipelineArgv({ srtPort: 1, rtpPort: 2, latencyMs: setup.latencyMs, targetLufs: setup.targetLufs, bands: setup.bands })]
    .map((a) => a.replace('127.0.0.1:1?', '127.0.0.1:SRT_PORT?').replace('127.0.0.1:2?', '127.0.0.1:RTP_PORT?'))];
}

/** One process of a reference pipeline: in its own process group, its stderr's last lines kept. */
class ReferenceProcess {
  readonly errors: string[] = [];
  private constructor(readonly child: ChildProcess) {
    child.on('error', () => undefined);
    child.stdout?.resume();
    if (child.stderr !== null) {
      createInterface({ input: child.stderr }).on('line', (l) => {
        this.errors.push(l);
        if (this.errors.length > 5) this.errors.shift();
      });
    }
  }

  /** fds 3 and 4 as the supervisor gives a child (the passphrase pipe, none here, and the control channel) */
  static start(command: string, args: readonly string[], env?: NodeJS.ProcessEnv): ReferenceProcess {
    return new ReferenceProcess(spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe'], detached: true }));
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async stop(): Promise<void> {
    killGroup(this.child.pid, 'SIGKILL');
    if (this.alive) await Promise.race([new Promise((resolve) => this.child.once('exit', resolve)), sleep(2000)]);
  }
}

/** One reference pipeline: an ffmpeg, the floor's input graph and sender, or a passthrough graph. */
class ReferencePipeline {
  private constructor(readonly processes: ReferenceProcess[], readonly srtPort: number, readonly rtpPort: number) {}

  static start(setup: ReferenceScaleSetup, srtPort: number, rtpPort: number): ReferencePipeline {
    // our elements for the gst-launch-1.0 kinds
    const env = { ...process.env, GST_PLUGIN_PATH: setup.pluginPath };
    if (setup.kind === 'floor') {
      return new ReferencePipeline([
        ReferenceProcess.start('gst-launch-1.0', floorInputArgv(setup, srtPort), env),
        ReferenceProcess.start(setup.floorSender, ['127.0.0.1', String(rtpPort)]),
      ], srtPort, rtpPort);
    }
    if (setup.kind === 'passthrough' || setup.kind === 'no-bridge') {
      return new ReferencePipeline([ReferenceProcess.start('gst-launch-1.0', passthroughArgv(setup, srtPort, rtpPort), env)], srtPort, rtpPort);
    }
    const argv = ffmpegPipelineArgv({ srtPort, rtpPort, latencyMs: setup.latencyMs, targetLufs: setup.targetLufs, bands: setup.bands });
    return new ReferencePipeline([ReferenceProcess.start('ffmpeg', argv)], srtPort, rtpPort);
  }

  get alive(): boolean {
    return this.processes.every((p) => p.alive);
  }

  get errors(): string[] {
    return this.processes.flatMap((p) => p.errors);
  }

  get pids(): number[] {
    return this.processes.map((p) => p.child.pid ?? 0);
  }

  async stop(): Promise<void> {
    await stopAll(this.processes);
  }
}

/** CPU seconds and resident bytes of one pipeline's processes, summed. */
async function pipelineStats(pids: readonly number[]): Promise<{ cpuSeconds: number; residentBytes: number }> {
  const stats = await Promise.all(pids.map((pid) => readProcessStats(pid)));
  return {
    cpuSeconds: stats.reduce((sum, x) => sum + (x?.cpuSeconds ?? 0), 0),
    residentBytes: stats.reduce((sum, x) => sum + (x?.residentBytes ?? 0), 0),
  };
}

/** The local UDP ports bound on this host (IPv4 and IPv6), from /proc/net/udp{,6}. */
async function boundUdpPorts(): Promise<Set<number>> {
  const ports = new Set<number>();
  for (const file of ['/proc/net/udp', '/proc/net/udp6']) {
    const text = await readFile(file, 'utf8').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      const local = line.trim().split(/\s+/)[1]; // "0100007F:1F90"
      const port = local === undefined ? Number.NaN : parseInt(local.slice(local.lastIndexOf(':') + 1), 16);
      if (Number.isInteger(port)) ports.add(port);
    }
  }
  return ports;
}

/** Waits (100 ms polls) until every SRT listener is bound; throws, naming the pipeline, when a process ended or the time is up. */
async function waitListening(pipelines: readonly ReferencePipeline[], timeoutMs: number): Promise<void> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const dead = pipelines.find((p) => !p.alive);
    if (dead !== undefined) throw new Error(`a process of the reference pipeline listening on ${dead.srtPort} ended: ${dead.errors.join(' | ')}`);
    const bound = await boundUdpPorts();
    const waiting = pipelines.filter((p) => !bound.has(p.srtPort));
    if (waiting.length === 0) return;
    if (performance.now() > until) throw new Error(`${waiting.length} reference SRT listener(s) not bound in ${timeoutMs} ms`);
    await sleep(100);
  }
}

/**
 * N reference pipelines, as the engine's step runs N engine pipelines: listeners bound, then the
 * senders, every receiver flowing, `settleS`, a `windowS` window. A receiver without RTP after
 * 30 s is a reason (not an error): the reference's sweep then stops, the engine's goes on.
 */
export async function referenceScaleStep(setup: ReferenceScaleSetup, n: number): Promise<ReferenceScaleStep> {
  let counters: RtpCounters | undefined;
  const pipelines: ReferencePipeline[] = [];
  let senders: Sender[] = [];
  let loadBefore = '';
  try {
    loadBefore = await loadAverage();
    counters = await RtpCounters.start(setup.counterBinary, n);
    const t0 = performance.now();
    for (const rtpPort of counters.ports) pipelines.push(ReferencePipeline.start(setup, await freeUdpPort(), rtpPort));
    await waitListening(pipelines, 30_000 + 500 * n);
    const listeningMs = performance.now() - t0;
    senders = Sender.startAll(setup.sender, setup.programme, pipelines.map((p) => p.srtPort), setup.sender === 'gst-shared' ? await freeUdpPort() : 0, setup.senderRate);
    const notFlowing = await waitForAudio(counters, 60_000);
    const flowingMs = performance.now() - t0;
    await sleep(setup.settleS * 1000);

    // the window
    const pids = pipelines.map((p) => p.pids);
    const before = await Promise.all(pids.map((group) => pipelineStats(group)));
    const rigWindow = await openRigWindow(senders.map((x) => x.pid), counters);
    await sleep(setup.windowS * 1000);
    const rig = await rigWindow.close();
    const after = await Promise.all(pids.map((group) => pipelineStats(group)));

    const samples: ReferenceScalePipelineSample[] = pipelines.map((p, i) => ({
      srtPort: p.srtPort,
      rtpPort: p.rtpPort,
      cpuPct: (100 * Math.max(0, (after[i]?.cpuSeconds ?? 0) - (before[i]?.cpuSeconds ?? 0))) / rig.windowS,
      rssMiB: (after[i]?.residentBytes ?? 0) / 2 ** 20,
      ...rtpWindowSample(rig.snapshot, p.rtpPort),
      ended: !p.alive,
      lastError: p.errors.at(-1) ?? '',
      errors: [...p.errors],
    }));
    const reasons = realTimeReasons(samples, { senders });
    if (notFlowing > 0) reasons.unshift(`${notFlowing} receiver(s) got no audio in 60 s`);
    const pipelineCpuPct = spread(samples.map((p) => p.cpuPct));
    const rss = spread(samples.map((p) => p.rssMiB));
    const step: ReferenceScaleStep = {
      n,
      windowS: rig.windowS,
      realTime: reasons.length === 0,
      reasons,
      pipelineCpuPct,
      pipelineRssMiB: { median: rss.median, max: rss.max },
      senderCpuPct: { perSender: rig.senderCpuPct / n, sum: rig.senderCpuPct, processes: senders.length },
      receiversCpuPct: rig.receiversCpuPct,
      benchCpuPct: rig.benchCpuPct,
      accountedPctOfMachine: (pipelineCpuPct.sum + rig.senderCpuPct + rig.receiversCpuPct + rig.benchCpuPct) / cpus().length,
      rtp: rtpTotals(samples),
      listeningMs,
      flowingMs,
      loadBefore,
      pipelines: samples,
    };
    setup.log(
      `scale N=${n}, ${setup.kind} reference: ${step.realTime ? 'real time' : `NOT real time (${reasons.join('; ')})`}; per pipeline CPU median ` +
        `${pipelineCpuPct.median.toFixed(1)} % (max ${pipelineCpuPct.max.toFixed(1)} %), RSS ${rss.median.toFixed(1)} MiB; ` +
        `senders ${rig.senderCpuPct.toFixed(2)} % (${senders.length} process(es)); receivers ${rig.receiversCpuPct.toFixed(2)} %; bench ${rig.benchCpuPct.toFixed(2)} %; ` +
        `all of it ${step.accountedPctOfMachine.toFixed(0)} % of the machine; RTP ${step.rtp.minRatePerS.toFixed(0)}-${step.rtp.maxRatePerS.toFixed(0)}/s; SRT loss ${referenceSrtStats(setup.kind)}`,
    );
    return step;
  } catch (error) {
    // a saturated step starves the counter: judged, not an end of the run
    if (!(error instanceof CounterUnanswered)) throw error;
    const step: ReferenceScaleStep = { ...unmeasuredFigures(n, loadBefore), listeningMs: Number.NaN, pipelines: [] };
    setup.log(`scale N=${n}, ${setup.kind} reference: NOT real time (${step.reasons.join('; ')})`);
    return step;
  } finally {
    await stopAll(senders);
    await stopAll(pipelines);
    await counters?.stop();
  }
}
