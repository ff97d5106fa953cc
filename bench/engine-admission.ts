/**
 * The admission bench (`npm run bench -- --only scale --admission`): one engine with admission
 * control as configured by default (engine.cpu_reserve_percent 15, the host's online CPUs),
 * pipelines (loudness-normalize -23 and a 3-band eq) created one by one, each fed by its own
 * sender and flowing before the next is created, until the engine refuses one (503) three times
 * in a row, `Retry-After` apart (the host's other load comes and goes; a client that is refused
 * tries again as told). The fill starts once the engine reports positive headroom (the sweep's
 * last processes gone, at most 60 s). Then, after
 * `settleS`, a `windowS` window over every accepted pipeline with the plain sweep's real-time
 * test: no RTP sequence gap, RTP rate within 2 % of 1000 packets/s, no inserted silence, no SRT
 * packet lost or dropped, no restart. The accepted count is compared with the plain sweep's
 * largest real-time N of the same run (goal: at least 90 % of it, the admission bar; never more).
 */
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { freeUdpPort } from '../test/helpers/ports.js';
import { BenchEngine, RtpCounters, Sender, loadAverage, sleep, stopAll, type MetricTable, type SenderKind } from './engine-harness.js';
import { median } from './process.js';

export interface AdmissionBenchSettings {
  root: string;
  registry: string | undefined;
  counterBinary: string;
  programme: string;
  /** per-pipeline senders: `gst` (or `ffmpeg`); a shared sender cannot gain pipelines while it plays */
  sender: Exclude<SenderKind, 'gst-shared'>;
  processing: unknown[];
  packetsPerSend: number | undefined;
  settleS: number;
  windowS: number;
  /** the engine's max_pipelines, and the counter's sockets */
  maxPipelines: number;
  log: (line: string) => void;
}

export interface AdmissionBenchResult {
  sender: SenderKind;
  accepted: number;
  /** the last 503's message (null when max_pipelines was reached first) */
  refusal: string | null;
  /** 503s that a retry after Retry-After then turned into an accepted pipeline */
  refusalsRetried: number;
  /** every 503 of the fill (retried or not) by the rule that refused it */
  refusalsByRule: Record<RefusalRule, number>;
  /** the engine's headroom ratio when the fill started */
  headroomAtStart: number;
  /** the engine's cost of the shape when it refused, % of a core, and where it came from */
  costAtRefusal: string | null;
  /** ms from the first create to the refusal */
  fillMs: number;
  window: {
    windowS: number;
    realTime: boolean;
    reasons: string[];
    rtpMinRatePerS: number;
    rtpMaxRatePerS: number;
    rtpGaps: number;
    srtLost: number;
    srtDropped: number;
    restarts: number;
    pipelineCpuPctMedian: number;
    pipelineCpuPctSum: number;
    /** host headroom the engine reports at the end, fraction of capacity */
    headroomRatio: number;
    overloaded: boolean;
  };
  loadBefore: string;
  loadAfter: string;
}

/**
 * Which admission rule a 503's message comes from (docs/capacity.md): the room by the costs, the
 * room with the admitted pipelines counted at what they used (more than their costs), or
 * pipelines behind real time on a busy host.
 */
export type RefusalRule = 'cost' | 'used' | 'behind';

export function refusalRule(message: string): RefusalRule {
  if (/behind real time/.test(message)) return 'behind';
  return /more than their costs/.test(message) ? 'used' : 'cost';
}

/** `cost 2, used 1, behind 0` */
export function describeRules(by: Record<RefusalRule, number>): string {
  return `cost ${by.cost}, used ${by.used}, behind ${by.behind}`;
}

function value(table: MetricTable, name: string, id = ''): number {
  return table.get(name)?.get(id) ?? 0;
}

export async function admissionBench(s: AdmissionBenchSettings): Promise<AdmissionBenchResult> {
  const engine = await BenchEngine.spawn({
    dir: path.join(s.root, 'admission'),
    registryFrom: s.registry,
    maxPipelines: s.maxPipelines,
    rtpPacketsPerSend: s.packetsPerSend,
    admission: true,
  });
  let counters: RtpCounters | undefined;
  const senders: Sender[] = [];
  try {
    const loadBefore = await loadAverage();
    await engine.ready();
    counters = await RtpCounters.start(s.counterBinary, s.maxPipelines);
    const headroom = async (): Promise<number> => value(await engine.metrics(), 'audio_engine_host_cpu_headroom_ratio');
    const calmUntil = performance.now() + 60_000;
    let headroomAtStart = await headroom();
    while (headroomAtStart <= 0 && performance.now() < calmUntil) {
      await sleep(2000);
      headroomAtStart = await headroom();
    }
    const pipelines: { id: string; rtpPort: number }[] = [];
    let refusal: string | null = null;
    let refusalsRetried = 0;
    const refusalsByRule: Record<RefusalRule, number> = { cost: 0, used: 0, behind: 0 };
    const withoutAudio: number[] = [];
    const t0 = performance.now();
    for (const rtpPort of counters.ports) {
      const srtPort = await freeUdpPort();
      let refusedInARow = 0;
      let res: { status: number; text: string };
      for (;;) {
        res = await engine.request('POST', '/api/v1/pipelines', {
          name: `bench admission ${pipelines.length}`,
          input: { type: 'srt', port: srtPort, latency: 300 },
          processing: s.processing,
          output: { type: 'rtp', host: '127.0.0.1', port: rtpPort },
        });
        if (res.status !== 503) break;
        refusal = (JSON.parse(res.text) as { message: string }).message;
        refusalsByRule[refusalRule(refusal)] += 1;
        refusedInARow += 1;
        if (refusedInARow === 3) break;
        await sleep(10_000);
      }
      if (res.status === 503) break;
      refusalsRetried += refusedInARow;
      refusal = null;
      if (res.status !== 201) throw new Error(`create ${pipelines.length + 1}: ${res.status} ${res.text}`);
      pipelines.push({ id: (JSON.parse(res.text) as { id: string }).id, rtpPort });
      senders.push(Sender.start(s.sender, s.programme, [srtPort]));
      const until = performance.now() + 30_000;
      for (;;) {
        // the programme, not only packets: the bridge sends silence until its input comes
        const got = (await counters.snapshot()).sockets.find((c) => c.port === rtpPort)?.audio_frames ?? 0;
        if (got > 0) break;
        if (performance.now() > until) {
          // an accepted pipeline that cannot carry the programme is admission's miss, judged below
          withoutAudio.push(pipelines.length);
          s.log(`admission: pipeline ${pipelines.length} accepted but no audio in 30 s`);
          break;
        }
        await sleep(200);
      }
      // the engine's 5 s window then sees the new sender and pipeline
      await sleep(2000);
      if (pipelines.length % 8 === 0) s.log(`admission: ${pipelines.length} accepted, flowing`);
    }
    const fillMs = performance.now() - t0;
    const costAtRefusal = refusal === null ? null : (/estimated at ([\d.]+ % \([^)]*\))/.exec(refusal)?.[1] ?? null);
    s.log(`admission: ${pipelines.length} accepted (${refusalsRetried} refusal(s) retried; refusals by rule: ${describeRules(refusalsByRule)}); ${refusal === null ? 'max_pipelines reached' : `refused 3 times in a row: ${refusal}`}`);
    if (pipelines.length === 0) throw new Error(`admission: nothing accepted (headroom ratio ${headroomAtStart.toFixed(3)} at the start): ${refusal ?? ''}`);

    await sleep(s.settleS * 1000);
    const m0 = await engine.metrics();
    const w0 = performance.now();
    await counters.reset();
    await sleep(s.windowS * 1000);
    const snapshot = await counters.snapshot();
    const windowS = (performance.now() - w0) / 1000;
    const m1 = await engine.metrics();
    const byPort = new Map(snapshot.sockets.map((c) => [c.port, c]));
    const rows = pipelines.map((p) => {
      const d = (name: string): number => value(m1, name, p.id) - value(m0, name, p.id);
      const rtp = byPort.get(p.rtpPort) ?? { packets: 0, gaps: 0, drops: 0, silent_frames: 0 };
      return {
        rate: rtp.packets / snapshot.windowS,
        gaps: rtp.gaps,
        silentMs: rtp.silent_frames / 48,
        lost: Math.max(0, d('audio_engine_pipeline_srt_packets_lost_total')),
        dropped: Math.max(0, d('audio_engine_pipeline_srt_packets_dropped_total')),
        restarts: d('audio_engine_pipeline_restarts_total'),
        cpuPct: (100 * d('audio_engine_pipeline_child_cpu_seconds_total')) / windowS,
      };
    });
    const sum = (f: (r: (typeof rows)[number]) => number): number => rows.reduce((a, r) => a + f(r), 0);
    const rates = rows.map((r) => r.rate);
    const reasons: string[] = [];
    if (withoutAudio.length > 0) reasons.push(`${withoutAudio.length} pipeline(s) without audio 30 s after they were accepted (number ${withoutAudio.join(', ')})`);
    if (sum((r) => r.gaps) > 0) reasons.push(`${sum((r) => r.gaps)} RTP sequence gap(s)`);
    const slow = rows.filter((r) => Math.abs(r.rate - 1000) > 20).length;
    if (slow > 0) reasons.push(`${slow} pipeline(s) off 1000 RTP packets/s by > 2 % (min ${Math.min(...rates).toFixed(0)}/s)`);
    // judged by the audio: packets that carry inserted silence are not real time
    const silent = rows.filter((r) => r.silentMs > 0);
    if (silent.length > 0) reasons.push(`inserted silence in ${silent.length} pipeline(s) (at most ${Math.max(...silent.map((r) => r.silentMs)).toFixed(0)} ms in one)`);
    if (sum((r) => r.lost) > 0) reasons.push(`${sum((r) => r.lost)} SRT packet(s) lost`);
    if (sum((r) => r.dropped) > 0) reasons.push(`${sum((r) => r.dropped)} SRT packet(s) dropped`);
    if (sum((r) => r.restarts) > 0) reasons.push(`${sum((r) => r.restarts)} child restart(s)`);
    const dead = senders.filter((x) => !x.alive).length;
    if (dead > 0) reasons.push(`${dead} sender(s) ended before the window did`);
    const result: AdmissionBenchResult = {
      sender: s.sender,
      accepted: pipelines.length,
      refusal,
      refusalsRetried,
      refusalsByRule,
      headroomAtStart,
      costAtRefusal,
      fillMs,
      window: {
        windowS,
        realTime: reasons.length === 0 && pipelines.length > 0,
        reasons,
        rtpMinRatePerS: Math.min(...rates),
        rtpMaxRatePerS: Math.max(...rates),
        rtpGaps: sum((r) => r.gaps),
        srtLost: sum((r) => r.lost),
        srtDropped: sum((r) => r.dropped),
        restarts: sum((r) => r.restarts),
        pipelineCpuPctMedian: median(rows.map((r) => r.cpuPct)),
        pipelineCpuPctSum: sum((r) => r.cpuPct),
        headroomRatio: value(m1, 'audio_engine_host_cpu_headroom_ratio'),
        overloaded: value(m1, 'audio_engine_host_overloaded') === 1,
      },
      loadBefore,
      loadAfter: await loadAverage(),
    };
    s.log(
      `admission: ${result.accepted} accepted; window ${windowS.toFixed(1)} s: ${result.window.realTime ? 'every one real time' : `NOT real time (${reasons.join('; ')})`}; ` +
        `RTP ${result.window.rtpMinRatePerS.toFixed(0)}-${result.window.rtpMaxRatePerS.toFixed(0)}/s; per pipeline CPU median ${result.window.pipelineCpuPctMedian.toFixed(1)} %; ` +
        `headroom ${result.window.headroomRatio.toFixed(3)}`,
    );
    return result;
  } finally {
    await stopAll(senders);
    await engine.stop();
    await counters?.stop();
  }
}
