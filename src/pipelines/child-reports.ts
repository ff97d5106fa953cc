/**
 * What a pipeline makes of its children's reports (the supervisor's ChildObserver): one
 * statistics object for the pipeline's whole life (counters summed over its children), the
 * state of its output legs, and the log lines an operator reads — underruns and the jitter
 * depth of the clock bridge, failovers, failed and recovered legs, SRT callers accepted,
 * replaced and refused. Each kind of report goes to the part that owns it (`report`).
 */
import type { Logger } from 'pino';
import { legOfSink, type LegInterface } from '../compiler/compile.js';
import type { LinkWatch } from '../net/link-watcher.js';
import type { ChildObserver, ChildSupervisor } from '../supervisor/child-supervisor.js';
import { depthBetween, describeDepth } from '../stats/depth.js';
import { describeFailover, failoverReport } from '../stats/failovers.js';
import { OutputLegs, SendWarningLines, type LegChange } from '../stats/output-legs.js';
import type { ClockBridgeEvent, FailoverEvent, SrtAccessEvent, StatsEvent } from '../stats/parse-line.js';
import { PipelineStats, type PipelineStatsLayout } from '../stats/pipeline-stats.js';
import { SrtCallerLog } from '../stats/srt-callers.js';
import { describeUnderrun, underrunBetween } from '../stats/underruns.js';

export interface ChildReportsOptions {
  /** Bound to the pipeline's ids (pipeline_id, station_id). */
  log: Logger;
  /** How log messages name the pipeline (`pipeline pl_…`, `station studio-a`). */
  label: string;
  now: () => number;
  /** Period of the child's statistics, ms. */
  statsIntervalMs: number;
  /** The engine's link watcher: the links of the legs' interfaces are watched while a child runs. */
  links?: LinkWatch;
}

/** What the next child reports and sends from: the compiler's plan (compiler/compile.ts compilePlan). */
export interface ReportsLayout {
  statsLayout: PipelineStatsLayout;
  legInterfaces: readonly LegInterface[];
}

/** Where the log lines also go: the supervisor's output ring (what GET …/logs shows). */
type OutputRing = Pick<ChildSupervisor, 'note' | 'record'>;

export class ChildReports implements ChildObserver {
  /** Statistics of the pipeline: one object for its whole life, counters summed over its children. */
  readonly stats: PipelineStats;
  /** The current child's output legs (its udpsinks): sending or failed (stats/output-legs.ts). */
  readonly legs = new OutputLegs();
  /** What the log says about SRT callers (kept across children: a refused caller retries). */
  private readonly callers = new SrtCallerLog();
  /** Drops the text lines of udpsink's send warnings (their bus messages are parsed). */
  private warningLines = new SendWarningLines();
  /** The current child's last clock bridge report (underruns are logged against it). */
  private lastBridge: ClockBridgeEvent | undefined;
  private legInterfaces: readonly LegInterface[];
  /** Ends the current child's watches of its legs' links. */
  private unwatchLinks: (() => void) | undefined;
  /** Bumped by every child start: a link change of an earlier child is ignored. */
  private run = 0;

  constructor(
    private readonly options: ChildReportsOptions,
    private readonly ring: OutputRing,
    layout: ReportsLayout,
  ) {
    this.stats = new PipelineStats(options.statsIntervalMs, layout.statsLayout);
    this.legInterfaces = layout.legInterfaces;
  }

  /** The layout of the next child (a changed graph): its series exist from the change on. */
  reconfigure(layout: ReportsLayout): void {
    this.stats.layout = layout.statsLayout;
    this.legInterfaces = layout.legInterfaces;
  }

  childStarted(): void {
    this.run += 1;
    this.stats.childStarted();
    this.lastBridge = undefined; // a new child counts from 0
    this.legs.childStarted();
    this.warningLines = new SendWarningLines();
    this.watchLinks();
  }

  report(event: StatsEvent, now: number): void {
    switch (event.kind) {
      case 'srtaccess':
        this.reportCaller(event);
        break;
      case 'clockbridge':
        this.reportBridge(event);
        break;
      case 'udp-send-warning':
        this.reportLeg(this.legs.onWarning(event));
        break;
      case 'pipelinestats':
        for (const change of this.legs.onReport(event.output?.packets)) this.reportLeg(change);
        break;
      case 'failover':
        this.reportFailover(event);
        break;
      case 'level':
      case 'loudnorm':
      case 'enginecontrol':
        break;
      default: {
        const unknown: never = event;
        throw new Error(`unknown report ${JSON.stringify(unknown)}`);
      }
    }
    this.stats.apply(event, now);
  }

  swallows(line: string): boolean {
    return this.warningLines.swallow(line);
  }

  childEnded(): void {
    this.unwatchLinks?.();
    this.unwatchLinks = undefined;
    this.stats.childEnded(); // the dead child's gauges read "no child" from now on; its counts stay in the totals
  }

  lastProgressAt(): number | undefined {
    return this.stats.lastProgressAt;
  }

  passedAudio(): boolean {
    return this.stats.childPassedAudio();
  }

  /** Underruns and depth changes of the clock bridge since its previous report: a log line each. */
  private reportBridge(event: ClockBridgeEvent): void {
    const underruns = underrunBetween(this.lastBridge, event);
    const depth = depthBetween(this.lastBridge, event);
    this.lastBridge = event;
    const { log, label } = this.options;
    if (depth !== undefined) {
      log[depth.state === 'back' ? 'info' : 'warn']({ event: 'jitter-depth', ...depth }, `${label}: ${describeDepth(depth)}`);
      this.ring.note(describeDepth(depth));
    }
    if (underruns === undefined) return;
    log.warn({ event: 'underrun', ...underruns }, `${label}: ${describeUnderrun(underruns)}`);
    this.ring.note(describeUnderrun(underruns));
  }

  /**
   * Watches the links of the child's legs' interfaces while it runs (until childEnded): each
   * change of a link goes into the legs' state. The watch tells the current state at once: a
   * child started on a link without carrier has that leg failed from its start.
   */
  private watchLinks(): void {
    this.unwatchLinks?.();
    this.unwatchLinks = undefined;
    const links = this.options.links;
    if (links === undefined || this.legInterfaces.length === 0) return;
    const run = this.run;
    const ends = this.legInterfaces.map(({ sink, interface: ifname }) =>
      links.watch(ifname, (cause) => {
        if (this.run === run) this.reportLeg(this.legs.onLink(sink, ifname, cause));
      }));
    this.unwatchLinks = () => {
      for (const end of ends) end();
    };
  }

  /** An output leg failed (its sends fail, or its interface has no carrier; the child goes on) or sends again: the log and the output ring. */
  private reportLeg(change: LegChange | undefined): void {
    if (change === undefined) return;
    const { log, label } = this.options;
    const leg = legOfSink(change.sink) ?? change.sink;
    const where = change.interface !== undefined ? `link of ${change.interface}` : `sending to ${change.client ?? '?'}`;
    const text = change.state === 'failed'
      ? `output leg ${leg} failed: ${where}: ${change.error ?? 'unknown reason'}`
      : `output leg ${leg} is sending again`;
    if (change.state === 'failed') {
      const cause = change.interface !== undefined ? { interface: change.interface } : { destination: change.client };
      log.warn({ event: 'output-leg-failed', leg, sink: change.sink, ...cause, error: change.error }, `${label}: ${text}`);
    } else {
      log.info({ event: 'output-leg-recovered', leg, sink: change.sink }, `${label}: ${text}`);
    }
    this.ring.record(text);
  }

  /** The bridge switched inputs: one `failover` log line with the figures that triggered it. */
  private reportFailover(event: FailoverEvent): void {
    const report = failoverReport(event);
    this.options.log.warn({ event: 'failover', ...report }, `${this.options.label}: ${describeFailover(report)}`);
    this.ring.note(describeFailover(report));
  }

  /** An SRT caller accepted, replaced or refused: the log and the output ring. */
  private reportCaller(event: SrtAccessEvent): void {
    const line = this.callers.report(event, this.options.now());
    if (line === undefined) return;
    this.options.log[line.level](line.fields, `${this.options.label}: ${line.text}`);
    this.ring.record(line.text);
  }
}
