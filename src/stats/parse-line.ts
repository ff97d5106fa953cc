/**
 * Child output lines → typed statistics events. The element messages are the versioned contract
 * between our C elements and this parser (docs/elements-*.md). Partial lines, stderr noise,
 * unknown messages and garbage give undefined; nothing here throws.
 */
import { parseStructure, type GstStructure, type GstValue } from './gst-structure.js';

export interface LevelEvent {
  kind: 'level';
  element: string;
  rmsDb: number[];
  peakDb: number[];
}

export interface LoudnessEvent {
  kind: 'loudnorm';
  element: string;
  inputMomentary: number;
  inputShortTerm: number;
  inputIntegrated: number;
  inputLoudnessRange: number;
  inputTruePeak: number;
  gain: number;
  outputMomentary: number;
  outputShortTerm: number;
  outputIntegrated: number;
  outputTruePeak: number;
  /** Seconds of audio the integrated, LRA and max true-peak figures cover (since the start or the last measurement reset). */
  measuredSeconds?: number;
}

export interface PipelineStatsEvent {
  kind: 'pipelinestats';
  element: string;
  /** The child's pipeline running time when the message was made, ns (absent while it has no clock). */
  runningTimeNs?: number;
  srt?: {
    connected: boolean;
    rttMs: number;
    packetsReceived: number;
    packetsLost: number;
    packetsRetransmitted: number;
    packetsDropped: number;
    bytesReceived: number;
    receiveRateMbps: number;
    bandwidthMbps: number;
  };
  output?: { packets: number; bytes: number };
}

/** A caller of the SRT listener, from our `srtaccess` element (docs/elements-srtaccess.md). */
export type SrtAccessEvent =
  | {
      kind: 'srtaccess';
      element: string;
      event: 'accepted';
      peer?: string;
      /** Put in place of a connection that had delivered nothing for the element's reconnect-ms. */
      replaced: boolean;
    }
  | {
      kind: 'srtaccess';
      element: string;
      event: 'rejected';
      peer?: string;
      /** libsrt's reject code (SRT_REJ_*: 1010 wrong passphrase, 1011 passphrase on one side only). */
      rejectCode: number;
      /** libsrt's words for it. */
      reason: string;
      /** The listener has a passphrase. */
      passphrase: boolean;
      /** Refused by the element: the connected caller is delivering (reject code 0, or 1000 in the handshake). */
      busy: boolean;
    };


/** The clock bridge's state (docs/elements-clockbridge.md): jitter buffer and drift tracking. */
export interface ClockBridgeEvent {
  kind: 'clockbridge';
  element: string;
  /** Running time of the end of the last output chunk, ns of the output clock (the child's own time). */
  runningTimeNs?: number;
  /** Sender clock against the pipeline clock, ppm (positive: the sender is fast); NaN while the bridge cannot know it yet. */
  driftPpm: number;
  /**
   * The drift from about 10 s of input on and its uncertainty (a ~95 % half-width), ppm, whether
   * driftPpm is known or not; NaN while the bridge has none, undefined from an element without them.
   */
  driftEstimatePpm?: number;
  driftUncertaintyPpm?: number;
  /** FIFO fill (its time average while playing), the reserve below the input's packet saw-tooth (engine.jitter_ms), and the average fill the bridge keeps (target + saw-tooth depth), seconds. */
  fillSeconds: number;
  targetSeconds: number;
  setpointSeconds: number;
  /**
   * The setpoint above the target (the depth the input's pattern and lateness ask for) and the
   * setpoint's ceiling (jitter-max), seconds; episodes of a depth asked above the ceiling and
   * underruns while held at it, since the child started. Undefined from an element without them.
   */
  depthSeconds?: number;
  ceilingSeconds?: number;
  ceilingHits?: number;
  ceilingUnderruns?: number;
  /** Cumulative since the child started. */
  underruns: number;
  overruns: number;
  /** Input is arriving (a caller sends audio). */
  inputActive: boolean;
  /** Decoded input frames the bridge received since the child started (0: no audio yet). */
  inputFrames: number;
  /**
   * Silence the output carried between underruns and the input's return within 1 s (audio that
   * came late, not an input that stopped), seconds since the child started; and the last such
   * hole's. 0 from an element that does not report them.
   */
  insertedSilenceSeconds: number;
  lastUnderrunSeconds: number;
  /** The bridge's contribution to the latency (its FIFO) and the steps' after it (a look-ahead), seconds. */
  latencySeconds: number;
  /** Resampling ratio (output samples per input sample). */
  ratio: number;
  /**
   * The output thread runs SCHED_FIFO (the element asks priority 10 for it); undefined from an
   * element that does not say (before `output-realtime` was in its message).
   */
  outputRealtime?: boolean;
  /** The input thread runs SCHED_FIFO (priority 5): false before its first buffer and for a paced input; undefined when not said. */
  inputRealtime?: boolean;
  /**
   * Real-time threads of the child that the element's guard moved to SCHED_OTHER (each ran 200 ms
   * of CPU without blocking), since the child started; undefined from an element without the guard.
   */
  realtimeDemotions?: number;
  /** The failover state (active input, selection, each input's health); undefined from an element without it. */
  failover?: FailoverState;
}

/** The inputs of a clock bridge, as `active-input` and the failover message name them. */
export const BRIDGE_INPUTS = ['main', 'backup', 'fallback', 'none'] as const;
export type BridgeInput = (typeof BRIDGE_INPUTS)[number];
/** What `select` may force (`auto`: the policy decides). */
export const SELECTIONS = ['auto', 'main', 'backup', 'fallback'] as const;
export type Selection = (typeof SELECTIONS)[number];
export const FAILOVER_REASONS = ['loss', 'silence', 'return', 'manual'] as const;
export type FailoverReason = (typeof FAILOVER_REASONS)[number];

/** One SRT input's health as the bridge sees it. */
export interface BridgeInputHealth {
  /** Delivered audio within failover-loss. */
  connected: boolean;
  /** Short-term level, dBFS; -200 for no audio. */
  levelDb: number;
  /** How long below the silence level or without audio, seconds; 0 when audible. */
  silentSeconds: number;
}

/** The failover fields of the periodic clockbridge message (docs/elements-clockbridge.md). */
export interface FailoverState {
  activeInput: BridgeInput;
  selection: Selection;
  main: BridgeInputHealth;
  /** Only when the bridge has a backup pad. */
  backup?: BridgeInputHealth;
  /** How long the output has been continuously silent, seconds. */
  outputSilentSeconds: number;
}

/** The clock bridge switched inputs (its `failover` message). */
export interface FailoverEvent {
  kind: 'failover';
  element: string;
  runningTimeNs?: number;
  from: BridgeInput;
  to: BridgeInput;
  reason: FailoverReason;
  mainLevelDb: number;
  backupLevelDb: number;
  mainSilentSeconds: number;
  backupSilentSeconds: number;
  /** How long the input left had no audio, seconds. */
  lostSeconds: number;
}


/**
 * The acknowledgement of one control command, from our `enginecontrol` element
 * (docs/elements-enginecontrol.md): `id` 0 when the line was too malformed to carry one.
 */
export interface ControlAckEvent {
  kind: 'enginecontrol';
  element: string;
  id: number;
  ok: boolean;
  /** Why the command was refused (the element's words; absent when ok). */
  error?: string;
}

/**
 * A send of a udpsink failed (GStreamer's `Error sending UDP packets` warning, one per failed
 * send; the sink goes on): `client` is the destination ("239.69.2.1:5004"), `reason` the error
 * ("Error sending message: Network is unreachable"). stats/output-legs.ts.
 */
export interface UdpSendWarningEvent {
  kind: 'udp-send-warning';
  element: string;
  client: string;
  reason: string;
}

export type StatsEvent = LevelEvent | LoudnessEvent | PipelineStatsEvent | SrtAccessEvent | ClockBridgeEvent | FailoverEvent | ControlAckEvent | UdpSendWarningEvent;

const ELEMENT_MESSAGE = /^Got message #\d+ from element "([^"]+)" \(element\): (.*)$/;
const WARNING_MESSAGE = /^Got message #\d+ from element "([^"]+)" \(warning\): (GstMessageWarning, .*)$/;
/** The end of udpsink's debug text: "...GstUDPSink:out2:\nclient 239.69.2.1:5004, reason: Error sending message: ..." */
const UDP_SEND_FAILED = /gstmultiudpsink\.c\(\d+\): gst_multiudpsink_send_messages \(\): .*client (\S+), reason: (.*)$/s;

function udpSendWarning(line: string): UdpSendWarningEvent | undefined {
  const match = WARNING_MESSAGE.exec(line);
  if (match?.[1] === undefined || match[2] === undefined) return undefined;
  const debug = parseStructure(match[2])?.fields.get('debug');
  if (typeof debug !== 'string') return undefined;
  const failed = UDP_SEND_FAILED.exec(debug);
  if (failed?.[1] === undefined || failed[2] === undefined) return undefined;
  return { kind: 'udp-send-warning', element: match[1], client: failed[1], reason: failed[2] };
}

const num = (s: GstStructure, field: string): number | undefined => {
  const v = s.fields.get(field);
  return typeof v === 'number' ? v : undefined;
};
const numbers = (v: GstValue | undefined): number[] | undefined =>
  Array.isArray(v) && v.every((x): x is number => typeof x === 'number') ? v : undefined;

function requireNumbers<K extends string>(s: GstStructure, map: Record<K, string>): Record<K, number> | undefined {
  const out = {} as Record<K, number>;
  for (const [key, field] of Object.entries(map) as [K, string][]) {
    const value = num(s, field);
    if (value === undefined) return undefined;
    out[key] = value;
  }
  return out;
}

const CLOCK_BRIDGE_FIELDS = {
  driftPpm: 'drift-ppm',
  fillSeconds: 'fill',
  targetSeconds: 'target',
  underruns: 'underruns',
  overruns: 'overruns',
  latencySeconds: 'latency',
  ratio: 'ratio',
} as const;

const LOUDNESS_FIELDS = {
  inputMomentary: 'input-momentary',
  inputShortTerm: 'input-short-term',
  inputIntegrated: 'input-integrated',
  inputLoudnessRange: 'input-loudness-range',
  inputTruePeak: 'input-true-peak',
  gain: 'gain',
  outputMomentary: 'output-momentary',
  outputShortTerm: 'output-short-term',
  outputIntegrated: 'output-integrated',
  outputTruePeak: 'output-true-peak',
} as const;

export function parseLine(line: string): StatsEvent | undefined {
  const match = ELEMENT_MESSAGE.exec(line);
  if (match?.[1] === undefined || match[2] === undefined) return udpSendWarning(line);
  const element = match[1];
  const structure = parseStructure(match[2]);
  if (structure === undefined) return undefined;
  switch (structure.name) {
    case 'level': {
      const rmsDb = numbers(structure.fields.get('rms'));
      const peakDb = numbers(structure.fields.get('peak'));
      if (rmsDb === undefined || peakDb === undefined) return undefined;
      return { kind: 'level', element, rmsDb, peakDb };
    }
    case 'loudnorm': {
      const values = requireNumbers(structure, LOUDNESS_FIELDS);
      if (values === undefined) return undefined;
      const measured = num(structure, 'measured');
      return { kind: 'loudnorm', element, ...values, ...(measured === undefined ? {} : { measuredSeconds: measured }) };
    }
    case 'clockbridge': {
      const values = requireNumbers(structure, CLOCK_BRIDGE_FIELDS);
      const inputActive = structure.fields.get('input-active');
      if (values === undefined || typeof inputActive !== 'boolean') return undefined;
      // setpoint came with the element's first release; without it the target is the setpoint
      const runningTime = num(structure, 'running-time');
      const outputRealtime = structure.fields.get('output-realtime');
      const inputRealtime = structure.fields.get('input-realtime');
      const realtimeDemotions = num(structure, 'realtime-demotions');
      const depth = {
        driftEstimatePpm: num(structure, 'drift-estimate'),
        driftUncertaintyPpm: num(structure, 'drift-uncertainty'),
        depthSeconds: num(structure, 'depth'),
        ceilingSeconds: num(structure, 'ceiling'),
        ceilingHits: num(structure, 'ceiling-hits'),
        ceilingUnderruns: num(structure, 'ceiling-underruns'),
      };
      return {
        kind: 'clockbridge',
        element,
        ...(runningTime === undefined ? {} : { runningTimeNs: runningTime }),
        ...values,
        setpointSeconds: num(structure, 'setpoint') ?? values.targetSeconds,
        inputActive,
        inputFrames: num(structure, 'input-frames') ?? (inputActive ? 1 : 0),
        insertedSilenceSeconds: num(structure, 'inserted-silence') ?? 0,
        lastUnderrunSeconds: num(structure, 'last-underrun') ?? 0,
        // since the element's real-time threads; absent (or not a boolean) = unknown
        ...(typeof outputRealtime === 'boolean' ? { outputRealtime } : {}),
        ...(typeof inputRealtime === 'boolean' ? { inputRealtime } : {}),
        ...(realtimeDemotions === undefined ? {} : { realtimeDemotions }),
        // since the element's drift estimate and ceiling (jitter-max); absent = unknown
        ...Object.fromEntries(Object.entries(depth).filter(([, v]) => v !== undefined)),
        ...failoverState(structure),
      };
    }
    case 'failover':
      return failoverSwitch(element, structure);
    case 'pipelinestats': {
      const event: PipelineStatsEvent = { kind: 'pipelinestats', element };
      const runningTime = num(structure, 'running-time');
      if (runningTime !== undefined) event.runningTimeNs = runningTime;
      const connected = structure.fields.get('srt-connected');
      if (typeof connected === 'boolean') {
        event.srt = {
          connected,
          rttMs: num(structure, 'srt-rtt-ms') ?? 0,
          packetsReceived: num(structure, 'srt-packets-received') ?? 0,
          packetsLost: num(structure, 'srt-packets-lost') ?? 0,
          packetsRetransmitted: num(structure, 'srt-packets-retransmitted') ?? 0,
          packetsDropped: num(structure, 'srt-packets-dropped') ?? 0,
          bytesReceived: num(structure, 'srt-bytes-received') ?? 0,
          receiveRateMbps: num(structure, 'srt-receive-rate-mbps') ?? 0,
          bandwidthMbps: num(structure, 'srt-bandwidth-mbps') ?? 0,
        };
      }
      const packets = num(structure, 'output-packets');
      const bytes = num(structure, 'output-bytes');
      if (packets !== undefined && bytes !== undefined) event.output = { packets, bytes };
      return event;
    }
    case 'srtaccess':
      return srtAccess(element, structure);
    case 'enginecontrol':
      return controlAck(element, structure);
    default:
      return undefined;
  }
}

function srtAccess(element: string, s: GstStructure): SrtAccessEvent | undefined {
  const event = s.fields.get('event');
  const peerField = s.fields.get('peer');
  const peer = typeof peerField === 'string' ? { peer: peerField } : {};
  if (event === 'accepted') return { kind: 'srtaccess', element, event, ...peer, replaced: s.fields.get('replaced') === true };
  if (event !== 'rejected') return undefined;
  const rejectCode = num(s, 'reject-code');
  const reason = s.fields.get('reason');
  const passphrase = s.fields.get('passphrase');
  if (rejectCode === undefined || typeof reason !== 'string' || typeof passphrase !== 'boolean') return undefined;
  return { kind: 'srtaccess', element, event, ...peer, rejectCode, reason, passphrase, busy: s.fields.get('busy') === true };
}

function controlAck(element: string, s: GstStructure): ControlAckEvent | undefined {
  const version = num(s, 'version');
  const id = num(s, 'id');
  const ok = s.fields.get('ok');
  const error = s.fields.get('error');
  if (version !== 1 || id === undefined || !Number.isSafeInteger(id) || typeof ok !== 'boolean') return undefined;
  if (!ok && typeof error !== 'string') return undefined;
  return { kind: 'enginecontrol', element, id, ok, ...(ok ? {} : { error: error as string }) };
}

const oneOf = <T extends string>(values: readonly T[], value: GstValue | undefined): T | undefined =>
  typeof value === 'string' && (values as readonly string[]).includes(value) ? (value as T) : undefined;

function inputHealth(s: GstStructure, prefix: 'main' | 'backup'): BridgeInputHealth | undefined {
  const connected = s.fields.get(`${prefix}-connected`);
  const levelDb = num(s, `${prefix}-level`);
  const silentSeconds = num(s, `${prefix}-silent`);
  if (typeof connected !== 'boolean' || levelDb === undefined || silentSeconds === undefined) return undefined;
  return { connected, levelDb, silentSeconds };
}

/** The failover fields of a clockbridge message: all or nothing (an element before failover has none). */
function failoverState(s: GstStructure): { failover?: FailoverState } {
  const activeInput = oneOf(BRIDGE_INPUTS, s.fields.get('active-input'));
  const selection = oneOf(SELECTIONS, s.fields.get('selection'));
  const main = inputHealth(s, 'main');
  const outputSilentSeconds = num(s, 'output-silent');
  if (activeInput === undefined || selection === undefined || main === undefined || outputSilentSeconds === undefined) return {};
  const backup = inputHealth(s, 'backup');
  return { failover: { activeInput, selection, main, ...(backup === undefined ? {} : { backup }), outputSilentSeconds } };
}

function failoverSwitch(element: string, s: GstStructure): FailoverEvent | undefined {
  const from = oneOf(BRIDGE_INPUTS, s.fields.get('from'));
  const to = oneOf(BRIDGE_INPUTS, s.fields.get('to'));
  const reason = oneOf(FAILOVER_REASONS, s.fields.get('reason'));
  const values = requireNumbers(s, {
    mainLevelDb: 'main-level',
    backupLevelDb: 'backup-level',
    mainSilentSeconds: 'main-silent',
    backupSilentSeconds: 'backup-silent',
    lostSeconds: 'lost',
  });
  if (from === undefined || to === undefined || reason === undefined || values === undefined) return undefined;
  const runningTime = num(s, 'running-time');
  return { kind: 'failover', element, ...(runningTime === undefined ? {} : { runningTimeNs: runningTime }), from, to, reason, ...values };
}
