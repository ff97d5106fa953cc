/**
 * ptp4l's state from `pmc -u -b 0` output (linuxptp 3.1), pure. The engine asks
 * GET PARENT_DATA_SET, TIME_STATUS_NP, PORT_DATA_SET and DEFAULT_DATA_SET in one call
 * (PMC_QUERY) and turns the answers into a PtpStatus.
 *
 * Locked means PTP time is usable for RTP timestamps:
 * - a port in SLAVE: ptp4l follows a grandmaster and its servo has locked (ptp4l moves a port
 *   from UNCALIBRATED to SLAVE only then), or
 * - this host is the grandmaster: a port in MASTER (or GRAND_MASTER) and the grandmaster
 *   identity is the clock's own.
 * Anything else (LISTENING, UNCALIBRATED, FAULTY, PASSIVE, no answer) is unlocked. ptp4l keeps
 * the last grandmaster's identity in PARENT_DATA_SET after it lost it (captured: a follower in
 * LISTENING still names the old grandmaster), so the port state decides, not the identity.
 */
import { eui64ForSdp } from './sdp.js';

export const PMC_QUERY = ['GET PARENT_DATA_SET', 'GET TIME_STATUS_NP', 'GET PORT_DATA_SET', 'GET DEFAULT_DATA_SET'] as const;

/** The fields of one RESPONSE block, by name. */
export type PmcFields = ReadonlyMap<string, string>;

export interface PmcResponses {
  parent: PmcFields | undefined;
  time: PmcFields | undefined;
  /** One per port. */
  ports: PmcFields[];
  default: PmcFields | undefined;
}

const RESPONSE = /^\s*\S+ seq \d+ RESPONSE MANAGEMENT (\S+)\s*$/;
const FIELD = /^\s+(\S+)\s+(.*?)\s*$/;

/** Splits pmc output into its RESPONSE blocks. "sending:" lines and anything unknown are skipped. */
export function parsePmc(text: string): PmcResponses {
  const result: PmcResponses = { parent: undefined, time: undefined, ports: [], default: undefined };
  let current: Map<string, string> | undefined;
  for (const line of text.split(/\r?\n/)) {
    const head = RESPONSE.exec(line);
    if (head !== null) {
      current = new Map();
      switch (head[1] ?? '') {
        case 'PARENT_DATA_SET':
          result.parent = current;
          break;
        case 'TIME_STATUS_NP':
          result.time = current;
          break;
        case 'PORT_DATA_SET':
          result.ports.push(current);
          break;
        case 'DEFAULT_DATA_SET':
          result.default = current;
          break;
        default:
          current = undefined;
      }
      continue;
    }
    if (current === undefined) continue;
    const field = FIELD.exec(line);
    if (field !== null && field[1] !== undefined && field[2] !== undefined) current.set(field[1], field[2]);
    else if (!/^\s/.test(line)) current = undefined;
  }
  return result;
}

export type PtpState = 'locked' | 'unlocked' | 'unavailable';

export interface PtpStatus {
  /** unavailable: no ptp4l answered (not running, another domain, another socket). */
  state: PtpState;
  /** The grandmaster as RFC 7273 writes it ("1E-C2-9E-FF-FE-22-5E-6A"); null when unknown. */
  grandmaster_id: string | null;
  /** PTP domain of the local ptp4l; null when unknown. */
  domain: number | null;
  /** Offset from the master, seconds (TIME_STATUS_NP master_offset); null when unknown. */
  offset_seconds: number | null;
  /** The port states ("SLAVE", "MASTER", ...), one per port. */
  port_states: string[];
  /** This host's clock identity, RFC 7273 form; null when unknown. */
  clock_id: string | null;
  /** Why the clock is not locked; absent when locked. */
  reason?: string;
}

export const NO_PTP: PtpStatus = {
  state: 'unavailable',
  grandmaster_id: null,
  domain: null,
  offset_seconds: null,
  port_states: [],
  clock_id: null,
  reason: 'no ptp4l answered',
};

const IDENTITY = /^[0-9a-fA-F]{6}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{6}$/;

function identity(value: string | undefined): string | null {
  return value !== undefined && IDENTITY.test(value) ? eui64ForSdp(value) : null;
}

function integer(value: string | undefined): number | null {
  if (value === undefined || !/^[+-]?\d+$/.test(value)) return null;
  return Number(value);
}

/** The status pmc's answers describe. `unavailableReason` is used when nothing answered. */
export function ptpStatusOf(responses: PmcResponses, unavailableReason = NO_PTP.reason): PtpStatus {
  const portStates = responses.ports.map((p) => p.get('portState') ?? 'UNKNOWN');
  if (responses.parent === undefined && responses.default === undefined && portStates.length === 0) {
    return { ...NO_PTP, reason: unavailableReason ?? 'no ptp4l answered' };
  }
  const grandmaster = identity(responses.parent?.get('grandmasterIdentity'));
  const clock = identity(responses.default?.get('clockIdentity'));
  const domain = integer(responses.default?.get('domainNumber'));
  const offsetNs = integer(responses.time?.get('master_offset'));
  const following = portStates.includes('SLAVE');
  const leading = portStates.some((s) => s === 'MASTER' || s === 'GRAND_MASTER') && grandmaster !== null && grandmaster === clock;
  const locked = (following || leading) && grandmaster !== null && domain !== null;
  const status: PtpStatus = {
    state: locked ? 'locked' : 'unlocked',
    grandmaster_id: grandmaster,
    domain,
    // The grandmaster itself reports 0; a follower its last measured offset.
    offset_seconds: offsetNs === null ? null : offsetNs / 1e9,
    port_states: portStates,
    clock_id: clock,
  };
  if (!locked) status.reason = `ptp4l port state ${portStates.join(', ') || 'unknown'}: not following a grandmaster`;
  return status;
}
