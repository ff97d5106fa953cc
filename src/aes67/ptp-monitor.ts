/**
 * Polls the host's ptp4l through its management interface: `pmc -u -b 0 -d DOMAIN -s SOCKET`
 * with the four GETs of PMC_QUERY, one call every `pollMs`, never two at once. No ptp4l (pmc
 * gets no answer), no pmc installed, or a pmc that hangs: the status is "unavailable" with the
 * reason, and polling goes on.
 */
import path from 'node:path';
import type { Logger } from 'pino';
import { runCommand, type RunResult } from '../process/child.js';
import { NO_PTP, parsePmc, PMC_QUERY, ptpStatusOf, type PtpStatus } from './pmc.js';

export interface PtpMonitorOptions {
  socket: string;
  /**
   * pmc's own socket (`-i`; pmc unlinks it before and after). Its default, /var/run/pmc.<pid>,
   * is not writable for the engine under its systemd unit; see pmcLocalSocket.
   */
  localSocket: string;
  domain: number;
  pollMs: number;
  log: Logger;
  /** Runs pmc (tests and the engine: runCommand). */
  run?: (command: string, args: readonly string[], env: Readonly<Record<string, string>>, timeoutMs: number) => Promise<RunResult>;
}

/** A path for pmc's own socket: in the state folder when it fits a socket address (107 bytes), else in the temp folder. */
export function pmcLocalSocket(stateDir: string, tmpDir: string, pid: number): string {
  const inState = path.join(stateDir, 'pmc.sock');
  return Buffer.byteLength(inState) <= 107 ? inState : path.join(tmpDir, `audio-engine-pmc.${pid}.sock`);
}

export class PtpMonitor {
  private current: PtpStatus = NO_PTP;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private closed = false;
  private readonly listeners = new Set<(status: PtpStatus) => void>();

  constructor(private readonly options: PtpMonitorOptions) {}

  get status(): PtpStatus {
    return this.current;
  }

  /** Called after every poll whose state, grandmaster or domain differs from the last one. */
  onChange(listener: (status: PtpStatus) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Polls once now (resolves when the first status is known), then every pollMs. */
  start(): Promise<void> {
    this.polling = this.poll();
    return this.polling;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    await this.polling;
  }

  private async poll(): Promise<void> {
    const next = await this.ask();
    const before = this.current;
    this.current = next;
    if (next.state !== before.state || next.grandmaster_id !== before.grandmaster_id || next.domain !== before.domain) {
      this.options.log.info(
        { event: 'ptp-status', state: next.state, grandmaster_id: next.grandmaster_id, domain: next.domain, port_states: next.port_states },
        `PTP ${next.state}${next.grandmaster_id === null ? '' : `, grandmaster ${next.grandmaster_id}`}${next.reason === undefined ? '' : `: ${next.reason}`}`,
      );
      for (const listener of this.listeners) listener(next);
    }
    if (!this.closed) {
      this.timer = setTimeout(() => {
        this.polling = this.poll();
      }, this.options.pollMs);
      this.timer.unref();
    }
  }

  private async ask(): Promise<PtpStatus> {
    const run = this.options.run ?? runCommand;
    const args = ['-u', '-b', '0', '-d', String(this.options.domain), '-s', this.options.socket, '-i', this.options.localSocket, ...PMC_QUERY];
    try {
      const result = await run('pmc', args, {}, Math.min(5000, this.options.pollMs));
      if (result.exitCode === undefined) {
        return { ...NO_PTP, reason: 'pmc could not run or did not end in time (is linuxptp installed?)' };
      }
      if (result.exitCode !== 0) {
        const detail = result.stderr.trim().split('\n')[0] ?? '';
        return { ...NO_PTP, reason: `pmc failed (exit ${result.exitCode})${detail === '' ? '' : `: ${detail}`}` };
      }
      return ptpStatusOf(parsePmc(result.stdout), `no ptp4l answered on ${this.options.socket} in domain ${this.options.domain}`);
    } catch (error) {
      return { ...NO_PTP, reason: `pmc could not run: ${(error as Error).message}` };
    }
  }
}
