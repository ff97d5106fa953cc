/** What /health and GetHealth say about PTP: a warning while the clock is not locked, never a failure. */
import type { PtpStatus } from './pmc.js';

export function ptpWarnings(status: PtpStatus): string[] {
  if (status.state === 'locked') return [];
  return [`ptp ${status.state}: ${status.reason ?? 'not locked'}; SDPs name ts-refclk localmac or traceable, not a grandmaster`];
}
