/** PTP series, read at scrape time from the last ptp4l poll (aes67/ptp-monitor.ts). */
import { Gauge, type Registry } from 'prom-client';
import type { PtpStatus } from '../aes67/pmc.js';

export function registerPtpMetrics(registry: Registry, ptp: { readonly status: PtpStatus }): void {
  new Gauge({
    name: 'audio_engine_ptp_locked',
    help: '1 while ptp4l follows a grandmaster with a locked servo (port SLAVE) or this host is the grandmaster, 0 otherwise.',
    registers: [registry],
    collect() {
      this.set(ptp.status.state === 'locked' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'audio_engine_ptp_offset_seconds',
    help: "Offset of the host's PTP clock from its master (ptp4l master_offset), seconds, by PTP domain; absent while unknown.",
    // A label so that the series can be absent (prom-client keeps a 0 for an unlabelled gauge).
    labelNames: ['domain'],
    registers: [registry],
    collect() {
      this.reset();
      const s = ptp.status;
      if (s.offset_seconds !== null) this.set({ domain: String(s.domain ?? '') }, s.offset_seconds);
    },
  });
  new Gauge({
    name: 'audio_engine_ptp_info',
    help: 'The PTP grandmaster and domain ptp4l reports, and its state (value is always 1; absent without ptp4l).',
    labelNames: ['grandmaster_id', 'domain', 'state'],
    registers: [registry],
    collect() {
      this.reset();
      const s = ptp.status;
      if (s.grandmaster_id !== null) this.set({ grandmaster_id: s.grandmaster_id, domain: String(s.domain ?? ''), state: s.state }, 1);
    },
  });
}
