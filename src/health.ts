/** Health: status, version and uptime; unhealthy when the engine cannot run pipelines. */
import { ptpWarnings } from './aes67/ptp-health.js';
import type { PtpStatus } from './aes67/pmc.js';
import type { OverloadReport } from './capacity/host-capacity.js';
import type { GstCheck } from './gst/environment.js';
import { realtimeWarning, type RealtimeRefused } from './gst/realtime.js';

/** A stored pipeline record set aside at start-up because it could not be read. */
export interface DamagedRecordReport {
  file: string;
  reason: string;
}

export interface HealthReport {
  status: 'healthy' | 'unhealthy';
  version: string;
  uptime: string;
  reason?: string;
  /** A warning while the host is overloaded, with its figures (the status stays healthy). */
  overloaded?: OverloadReport;
  /** Present when records were set aside at start-up: those pipelines are not running. */
  damaged_records?: DamagedRecordReport[];
  /**
   * Present while pipelines run and none's output thread runs real time (SCHED_FIFO), with the
   * reason read from the engine's own limits: a warning, the status stays healthy.
   */
  realtime_refused?: RealtimeRefused;
}

/**
 * The warnings /health and GetHealth carry: PTP not locked (when PTP is watched), host overloaded,
 * no pipeline's output thread real time.
 */
export function healthWarnings(report: Pick<HealthReport, 'overloaded' | 'realtime_refused'>, ptp?: PtpStatus): string[] {
  return [
    ...(ptp === undefined ? [] : ptpWarnings(ptp)),
    ...(report.overloaded === undefined ? [] : [`overloaded: ${report.overloaded.message}`]),
    ...(report.realtime_refused === undefined ? [] : [realtimeWarning(report.realtime_refused)]),
  ];
}

/** "3h 12m": whole hours and minutes since start. */

export function formatUptime(ms: number): string {
  const minutes = Math.floor(Math.max(0, ms) / 60_000);
  return `${Math.floor(minutes / 60)}h ${minutes % 60}m`;
}

export class EngineHealth {
  private check: Promise<GstCheck> | undefined;
  private checkedAt = 0;

  constructor(
    private readonly version: string,
    private readonly startedAt: number,
    private readonly runCheck: () => Promise<GstCheck>,
    private readonly now: () => number = Date.now,
    private readonly damaged: () => readonly DamagedRecordReport[] = () => [],
    private readonly overload: () => OverloadReport | undefined = () => undefined,
    /** Running pipelines, none real time: gst/realtime.ts realtimeRefused(). */
    private readonly realtime: () => RealtimeRefused | undefined = () => undefined,
  ) {}

  /**
   * Starts the element check (at start-up, so the first health call need not wait for it) and
   * returns it. With `remembered` (the last good check, still valid), health answers from it
   * until the fresh check is done.
   */
  prime(remembered?: GstCheck): Promise<GstCheck> {
    this.checkedAt = this.now();
    const fresh = this.runCheck();
    if (remembered === undefined) {
      this.check = fresh;
    } else {
      this.check = Promise.resolve(remembered);
      void fresh.then((result) => {
        this.check = Promise.resolve(result);
      });
    }
    return fresh;
  }

  async report(): Promise<HealthReport> {
    // A failed check is tried again after 10 s: an operator may have run set-up meanwhile.
    let result = await (this.check ?? this.prime());
    if (!result.ok && this.now() - this.checkedAt > 10_000) result = await this.prime();
    const uptime = formatUptime(this.now() - this.startedAt);
    const overloaded = this.overload();
    const damaged = this.damaged();
    const report: HealthReport = result.ok
      ? { status: 'healthy', version: this.version, uptime }
      : { status: 'unhealthy', version: this.version, uptime, reason: result.reason ?? 'cannot run pipelines' };
    if (overloaded !== undefined) report.overloaded = overloaded;
    if (damaged.length > 0) report.damaged_records = damaged.map((d) => ({ file: d.file, reason: d.reason }));
    const realtime = this.realtime();
    if (realtime !== undefined) report.realtime_refused = realtime;
    return report;
  }
}
