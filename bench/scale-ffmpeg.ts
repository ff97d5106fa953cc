/**
 * The scale bench's reference (`--reference ffmpeg`): one step of N ffmpeg processes, each doing a
 * pipeline's job (bench/ffmpeg-pipeline.ts), in place of the engine, fed by the same kind of
 * sender and received by the same RTP counter, and judged by the same rule
 * (bench/scale-window.ts). Each ffmpeg is an SRT listener; all are bound before the senders
 * call. CPU and RSS of each from /proc/PID over the window. Every process started here is ended,
 * process group and all, also when the step fails.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { readProcessStats } from '../src/metrics/process-stats.js';
import { freeUdpPort } from '../test/helpers/ports.js';
import { killGroup, loadAverage, RtpCounters, Sender, sleep, stopAll, type SenderKind } from './engine-harness.js';
import { ffmpegPipelineArgv, type FfmpegEqBand } from './ffmpeg-pipeline.js';
import { openRigWindow, realTimeReasons, rtpTotals, rtpWindowSample, spread, waitForRtp, type RtpWindowSample, type ScaleStepFigures } from './scale-window.js';

/** What every step of the reference needs: the rig (shared with the engine's steps) and the job. */
export interface FfmpegScaleSetup {
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
  log: (line: string) => void;
}

export interface FfmpegScalePipelineSample extends RtpWindowSample {
  srtPort: number;
  rtpPort: number;
  cpuPct: number;
  rssMiB: number;
  /** the process ended before the window did */
  ended: boolean;
  /** its last stderr lines (`-loglevel error`), when it wrote any */
  errors: string[];
}

/**
 * One N of the reference's sweep: the pipeline figures are per ffmpeg process; the reasons follow
 * the engine's rule, without SRT loss (not read: ffmpeg exposes no SRT statistics).
 */
export interface FfmpegScaleStep extends ScaleStepFigures {
  /** ms from the first ffmpeg started to every SRT listener bound (flowingMs: to every receiver getting packets) */
  listeningMs: number;
  pipelines: FfmpegScalePipelineSample[];
}

/** Why the SRT figures of the reference are missing from its judgement. */
export const FFMPEG_SRT_STATS = "not read: ffmpeg's SRT input exposes no statistics (a loss shows only as a gap in the audio)";

/** The argv of the reference's pipeline, ports shown as SRT_PORT and RTP_PORT (for the report). */
export function ffmpegScaleCommand(setup: Pick<FfmpegScaleSetup, 'latencyMs' | 'targetLufs' | 'bands'>): string[] {
  return ['ffmpeg', ...ffmpegPipelineArgv({ srtPort: 1, rtpPort: 2, latencyMs: setup.latencyMs, targetLufs: setup.targetLufs, bands: setup.bands })]
    .map((a) => a.replace('127.0.0.1:1?', '127.0.0.1:SRT_PORT?').replace('127.0.0.1:2?', '127.0.0.1:RTP_PORT?'));
}

/** One ffmpeg pipeline: in its own process group, its stderr's last lines kept. */
class FfmpegPipeline {
  readonly errors: string[] = [];
  private constructor(readonly child: ChildProcess, readonly srtPort: number, readonly rtpPort: number) {
    if (child.stderr !== null) {
      createInterface({ input: child.stderr }).on('line', (l) => {
        this.errors.push(l);
        if (this.errors.length > 5) this.errors.shift();
      });
    }
  }

  static start(setup: FfmpegScaleSetup, srtPort: number, rtpPort: number): FfmpegPipeline {
    const argv = ffmpegPipelineArgv({ srtPort, rtpPort, latencyMs: setup.latencyMs, targetLufs: setup.targetLufs, bands: setup.bands });
    const child = spawn('ffmpeg', argv, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    child.on('error', () => undefined);
    return new FfmpegPipeline(child, srtPort, rtpPort);
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  async stop(): Promise<void> {
    killGroup(this.child.pid, 'SIGKILL');
    if (this.alive) await Promise.race([new Promise((resolve) => this.child.once('exit', resolve)), sleep(2000)]);
  }
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

/** Waits (100 ms polls) until every SRT listener is bound; throws, naming the ffmpeg, when one ended or the time is up. */
async function waitListening(pipelines: readonly FfmpegPipeline[], timeoutMs: number): Promise<void> {
  const until = performance.now() + timeoutMs;
  for (;;) {
    const dead = pipelines.find((p) => !p.alive);
    if (dead !== undefined) throw new Error(`the ffmpeg listening on ${dead.srtPort} ended: ${dead.errors.join(' | ')}`);
    const bound = await boundUdpPorts();
    const waiting = pipelines.filter((p) => !bound.has(p.srtPort));
    if (waiting.length === 0) return;
    if (performance.now() > until) throw new Error(`${waiting.length} ffmpeg SRT listener(s) not bound in ${timeoutMs} ms`);
    await sleep(100);
  }
}

/**
 * N ffmpeg pipelines, as the engine's step runs N engine pipelines: listeners bound, then the
 * senders, every receiver flowing, `settleS`, a `windowS` window. A receiver without RTP after
 * 30 s is a reason (not an error): the reference's sweep then stops, the engine's goes on.
 */
export async function ffmpegScaleStep(setup: FfmpegScaleSetup, n: number): Promise<FfmpegScaleStep> {
  let counters: RtpCounters | undefined;
  const pipelines: FfmpegPipeline[] = [];
  let senders: Sender[] = [];
  try {
    const loadBefore = await loadAverage();
    counters = await RtpCounters.start(setup.counterBinary, n);
    const t0 = performance.now();
    for (const rtpPort of counters.ports) pipelines.push(FfmpegPipeline.start(setup, await freeUdpPort(), rtpPort));
    await waitListening(pipelines, 30_000 + 500 * n);
    const listeningMs = performance.now() - t0;
    senders = Sender.startAll(setup.sender, setup.programme, pipelines.map((p) => p.srtPort), setup.sender === 'gst-shared' ? await freeUdpPort() : 0, setup.senderRate);
    const notFlowing = await waitForRtp(counters, 30_000);
    const flowingMs = performance.now() - t0;
    await sleep(setup.settleS * 1000);

    // the window
    const pids = pipelines.map((p) => p.child.pid ?? 0);
    const before = await Promise.all(pids.map((pid) => readProcessStats(pid)));
    const rigWindow = await openRigWindow(senders.map((x) => x.pid), counters);
    await sleep(setup.windowS * 1000);
    const rig = await rigWindow.close();
    const after = await Promise.all(pids.map((pid) => readProcessStats(pid)));

    const samples: FfmpegScalePipelineSample[] = pipelines.map((p, i) => ({
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
    if (notFlowing > 0) reasons.unshift(`${notFlowing} receiver(s) got no RTP in 30 s`);
    const pipelineCpuPct = spread(samples.map((p) => p.cpuPct));
    const rss = spread(samples.map((p) => p.rssMiB));
    const step: FfmpegScaleStep = {
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
      `scale N=${n}, ffmpeg reference: ${step.realTime ? 'real time' : `NOT real time (${reasons.join('; ')})`}; per ffmpeg CPU median ` +
        `${pipelineCpuPct.median.toFixed(1)} % (max ${pipelineCpuPct.max.toFixed(1)} %), RSS ${rss.median.toFixed(1)} MiB; ` +
        `senders ${rig.senderCpuPct.toFixed(2)} % (${senders.length} process(es)); receivers ${rig.receiversCpuPct.toFixed(2)} %; bench ${rig.benchCpuPct.toFixed(2)} %; ` +
        `all of it ${step.accountedPctOfMachine.toFixed(0)} % of the machine; RTP ${step.rtp.minRatePerS.toFixed(0)}-${step.rtp.maxRatePerS.toFixed(0)}/s; SRT loss ${FFMPEG_SRT_STATS}`,
    );
    return step;
  } finally {
    await stopAll(senders);
    await stopAll(pipelines);
    await counters?.stop();
  }
}
