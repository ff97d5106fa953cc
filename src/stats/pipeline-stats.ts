/**
 * What is known about one pipeline's audio and transport, from its children's statistics events.
 * One object for the pipeline's whole life: counters are the engine's, summed over every child
 * (and over SRT reconnections within a child), so they only grow; the current values (levels,
 * loudness, connection, buffer) belong to the running child and read as "no signal" (below) before
 * its first report and from the moment it ends, so a dead child's values never linger.
 * Pure: the caller passes the clock.
 */
import type { BridgeInput, BridgeInputHealth, ClockBridgeEvent, FailoverEvent, LevelEvent, LoudnessEvent, PipelineStatsEvent, Selection, SrtAccessEvent, StatsEvent } from './parse-line.js';
import { SRT_REJ_BADSECRET, SRT_REJ_UNSECURE } from './srt-callers.js';

/** Input below this RMS on every channel counts as silence. */
export const SILENCE_DBFS = -60;
/** Silence this long is reported in the pipeline's `input_state`. */
export const SILENCE_REPORT_MS = 5000;
/**
 * "No signal" for every level, loudness and true-peak value (dBFS, LUFS, dBTP): what loudnorm
 * reports for digital silence, and what a pipeline reads before its child's first report or while
 * it has no child. Lower values (level reports -700 dBFS for digital silence) read as this floor.
 */
export const NO_SIGNAL_DB = -120;
/** Channels of the decoded input: the processing format is always stereo (compiler CAPS). */
export const INPUT_CHANNELS = 2;
/**
 * Input counts as arriving until the clock bridge has received no input frame for this long of
 * the child's own running time (two reports at the default 1 s interval): a loaded host's input
 * thread that misses one report does not make a pipeline flip to `waiting`.
 */
export const INPUT_HOLD_MS = 2000;
/** The output packet rate is taken over at least this much of the child's running time (once it has run that long). */
export const OUTPUT_RATE_WINDOW_MS = 5000;

export type InputState = 'waiting' | 'receiving' | 'silent';

export interface InputReport {
  input_state: InputState;
  silence_seconds: number;
  srt_connected: boolean;
}

/** What a pipeline's children will report, from its spec (compiler/compile.ts compilePlan). */
export interface PipelineStatsLayout {
  /** Element names of the loudness steps, in order. */
  loudnessSteps: readonly string[];
  /** The input is SRT: SRT statistics exist. */
  srtInput: boolean;
  /** The graph has a backup input (its health is reported); absent: none. */
  backupInput?: boolean;
}

/** One input's health as clients see it (REST `inputs.main`, `inputs.backup`). */
export interface InputHealthView {
  /** Delivered audio within failover.loss_ms (false before the child's first report). */
  connected: boolean;
  /** Short-term level, dBFS; null when no audio (or no report). */
  level_dbfs: number | null;
  /** How long below failover.silence_dbfs or without audio, seconds; null before the child's first report. */
  silent_seconds: number | null;
}

/** The failover fields of a pipeline's view (docs/failover.md). */
export interface FailoverView {
  /** The input on air; null before the child's first report. */
  active_input: BridgeInput | null;
  inputs: { main: InputHealthView; backup?: InputHealthView };
}

/** A level at or below this is the bridge's "no audio" (-200 dBFS). */
const NO_AUDIO_DB = -199;

function healthView(h: BridgeInputHealth | undefined): InputHealthView {
  if (h === undefined) return { connected: false, level_dbfs: null, silent_seconds: null };
  return {
    connected: h.connected,
    level_dbfs: Number.isFinite(h.levelDb) && h.levelDb > NO_AUDIO_DB ? Math.round(h.levelDb * 10) / 10 : null,
    silent_seconds: Math.round(h.silentSeconds * 10) / 10,
  };
}

/** The key of one failover count: from, to and reason. */
export interface FailoverCount {
  from: BridgeInput;
  to: BridgeInput;
  reason: FailoverEvent['reason'];
  count: number;
}

/** The backup input's srtaccess element (the compiler's `access2`). */
const BACKUP_ACCESS = 'access2';

/** Callers an SRT input refused, by input and cause, summed over the pipeline's children. */
export interface RefusedCallerCount {
  input: 'main' | 'backup';
  /** `busy`: the connected caller was delivering; `passphrase`: wrong or missing; `other`. */
  cause: 'busy' | 'passphrase' | 'other';
  count: number;
}

/** Counts summed over the pipeline's children. */
export interface PipelineCounts {
  srtPacketsReceived: number;
  srtPacketsLost: number;
  srtPacketsRetransmitted: number;
  srtPacketsDropped: number;
  srtBytesReceived: number;
  outputPackets: number;
  outputBytes: number;
  /** Jitter buffer underruns and overruns of the clock bridge. */
  bridgeUnderruns: number;
  bridgeOverruns: number;
  /** Silence the clock bridge inserted while the input was late (came back within 1 s), seconds. */
  bridgeInsertedSilence: number;
  /** Real-time threads the clock bridge's guard moved to SCHED_OTHER. */
  bridgeRealtimeDemotions: number;
  /** Episodes of a depth asked above the bridge's ceiling, and underruns while held at it. */
  bridgeCeilingHits: number;
  bridgeCeilingUnderruns: number;
}

type CountName = keyof PipelineCounts;
const COUNT_NAMES: readonly CountName[] = [
  'srtPacketsReceived', 'srtPacketsLost', 'srtPacketsRetransmitted', 'srtPacketsDropped', 'srtBytesReceived', 'outputPackets', 'outputBytes',
  'bridgeUnderruns', 'bridgeOverruns', 'bridgeInsertedSilence', 'bridgeRealtimeDemotions', 'bridgeCeilingHits', 'bridgeCeilingUnderruns',
];
const zeroCounts = (): PipelineCounts => ({
  srtPacketsReceived: 0, srtPacketsLost: 0, srtPacketsRetransmitted: 0, srtPacketsDropped: 0, srtBytesReceived: 0, outputPackets: 0, outputBytes: 0,
  bridgeUnderruns: 0, bridgeOverruns: 0, bridgeInsertedSilence: 0, bridgeRealtimeDemotions: 0, bridgeCeilingHits: 0, bridgeCeilingUnderruns: 0,
});

/** The current values of one loudness step (LoudnessEvent without kind and element). */
export type LoudnessValues = Omit<LoudnessEvent, 'kind' | 'element'>;

const NO_LOUDNESS: LoudnessValues = {
  inputMomentary: NO_SIGNAL_DB,
  inputShortTerm: NO_SIGNAL_DB,
  inputIntegrated: NO_SIGNAL_DB,
  inputLoudnessRange: 0,
  inputTruePeak: NO_SIGNAL_DB,
  gain: 0,
  outputMomentary: NO_SIGNAL_DB,
  outputShortTerm: NO_SIGNAL_DB,
  outputIntegrated: NO_SIGNAL_DB,
  outputTruePeak: NO_SIGNAL_DB,
  measuredSeconds: 0,
};

const round2 = (x: number | null): number | null => (x === null ? null : Math.round(x * 100) / 100);
const floorDb = (db: number): number => (Number.isFinite(db) ? Math.max(NO_SIGNAL_DB, db) : NO_SIGNAL_DB);

/** The pipeline's clock bridge as clients see it (REST `clock`, gRPC `Pipeline.clock`). */
export interface ClockReport {
  /**
   * The drift from about 10 s of input on, its ~95 % half-width in drift_uncertainty_ppm
   * (docs/clock.md); from an element without an estimate its report, null while that is unknown.
   */
  drift_ppm: number | null;
  /** The truth lies within drift_ppm ± this in about 95 % of readings, ppm; null with no estimate. */
  drift_uncertainty_ppm: number | null;
  jitter_buffer_seconds: number;
  jitter_target_seconds: number;
  /** The average fill the bridge keeps: the target + the depth of the input's packet saw-tooth. */
  jitter_setpoint_seconds: number;
  /** The setpoint above the target (what the input's pattern and lateness ask for), seconds; null from an element that does not say. */
  jitter_depth_seconds: number | null;
  /** The setpoint's ceiling (engine.jitter_max_ms or the pipeline's jitter_max_ms), seconds; null when not said. */
  jitter_ceiling_seconds: number | null;
  /** Times the input asked for a depth above the ceiling, all children. */
  ceiling_hits: number;
  underruns: number;
  overruns: number;
  /** Silence the output carried while the input was late (an underrun it came back from within 1 s), seconds, all children. */
  inserted_silence_seconds: number;
  /** Sender-to-RTP estimate: input (SRT) latency + the bridge's latency (docs/clock.md). */
  latency_seconds: number;
  /**
   * The current child's output thread runs SCHED_FIFO (real time: what keeps packets on time on a
   * busy host); null when its element does not say.
   */
  output_realtime: boolean | null;
  /** The same for its input thread (false before the first input buffer and for a paced input). */
  input_realtime: boolean | null;
}

export class PipelineStats {
  /** The current child's last level report (undefined before it or once the child ended). */
  level: LevelEvent | undefined;
  levelAt: number | undefined;
  /** The current child's last loudness report per step. */
  readonly loudness = new Map<string, LoudnessEvent>();
  /** The current child's last pipelinestats report. */
  transport: PipelineStatsEvent | undefined;
  /** The clock bridge's latest state (the current child's; undefined before its first report or once it ended). */
  clock: ClockBridgeEvent | undefined;
  /** When statistics last arrived from the current child (the watchdog's measure of progress). */
  lastProgressAt: number | undefined;
  private silentSince: number | undefined;
  /** The current child's last clock bridge report: its running time (ns) and input frames. */
  private bridgeAt: { timeNs: number; frames: number } | undefined;
  /** The child's running time (ns) of the last bridge report whose input had advanced. */
  private inputSeenNs: number | undefined;
  /**
   * The current child's output packet counts at its own running time (pipelinestats), oldest
   * first: the newest report at least OUTPUT_RATE_WINDOW_MS old and every one after it. `engine`:
   * the reports carried no running time, the engine's receive times stand in.
   */
  private outputHistory: { clock: 'child' | 'engine'; points: { timeNs: number; packets: number }[] } = { clock: 'child', points: [] };
  /** Counts of children that ended and of earlier SRT connections of this child. */
  private readonly base = zeroCounts();
  /** The current child's last reported counts (per connection for SRT). */
  private current = zeroCounts();
  private audioPassed = false;
  /** Switches of the bridge by from/to/reason, summed over the pipeline's children. */
  private readonly failovers = new Map<string, FailoverCount>();
  /** Refused SRT callers by input and cause, summed over the pipeline's children. */
  private readonly refusedCallers = new Map<string, RefusedCallerCount>();

  constructor(
    private readonly intervalMs: number,
    /** Replaced when the pipeline's graph changes (supervisor reconfigure()). */
    public layout: PipelineStatsLayout = { loudnessSteps: [], srtInput: false },
  ) {}

  /** A new child starts: nothing of it is known yet. */
  childStarted(): void {
    this.childEnded();
    this.audioPassed = false;
  }

  /** The current child ended: its counts go into the totals, its current values are gone. */
  childEnded(): void {
    for (const name of COUNT_NAMES) this.base[name] += this.current[name];
    this.current = zeroCounts();
    this.level = undefined;
    this.levelAt = undefined;
    this.loudness.clear();
    this.transport = undefined;
    this.clock = undefined;
    this.lastProgressAt = undefined;
    this.bridgeAt = undefined;
    this.inputSeenNs = undefined;
    this.outputHistory = { clock: 'child', points: [] };
  }

  /**
   * Whether the current (or just ended) child passed decoded audio: its clock bridge received
   * some (the output sends silence from the start, so its levels and packets do not tell).
   */
  childPassedAudio(): boolean {
    return this.audioPassed;
  }

  apply(event: StatsEvent, now: number): void {
    switch (event.kind) {
      case 'level':
        this.level = event;
        this.levelAt = now;
        break;
      case 'loudnorm':
        this.loudness.set(event.element, event);
        break;
      case 'clockbridge':
        this.clock = event;
        if (event.inputFrames > 0) this.audioPassed = true;
        this.countBridge(event);
        this.trackInput(event, now);
        break;
      case 'pipelinestats':
        this.transport = event;
        this.lastProgressAt = now;
        this.count(event);
        this.trackOutput(event, now);
        break;
      case 'failover': {
        const key = `${event.from}>${event.to}>${event.reason}`;
        const entry = this.failovers.get(key) ?? { from: event.from, to: event.to, reason: event.reason, count: 0 };
        entry.count += 1;
        this.failovers.set(key, entry);
        break;
      }
      case 'srtaccess': // logged by the supervisor (stats/srt-callers.ts); refusals counted here
        if (event.event === 'rejected') this.countRefused(event);
        break;
      case 'enginecontrol': // answers the supervisor's control channel (supervisor/control-channel.ts)
      case 'udp-send-warning': // the output legs' state (stats/output-legs.ts, kept by the supervisor)
        break;
      default: {
        const unknown: never = event;
        throw new Error(`unknown event ${JSON.stringify(unknown)}`);
      }
    }
    this.updateSilence(now);
  }

  /**
   * Input advanced when the bridge's input-frames grew since its previous report (or, in its first
   * report, is above 0), or when it says an input buffer just arrived (input-active). Times are the
   * child's own (the message's running-time), so when the engine receives the message does not
   * matter; an element without running-time falls back to the engine's clock.
   */
  private trackInput(event: ClockBridgeEvent, now: number): void {
    const timeNs = event.runningTimeNs ?? now * 1e6;
    const advanced = event.inputActive || event.inputFrames > (this.bridgeAt?.frames ?? 0);
    if (advanced) this.inputSeenNs = timeNs;
    this.bridgeAt = { timeNs, frames: event.inputFrames };
  }

  /** Keeps the output counts of the last OUTPUT_RATE_WINDOW_MS of the child's running time. */
  private trackOutput(event: PipelineStatsEvent, now: number): void {
    const packets = event.output?.packets;
    if (packets === undefined || !Number.isFinite(packets)) return;
    const clock = event.runningTimeNs === undefined ? 'engine' : 'child';
    const timeNs = event.runningTimeNs ?? now * 1e6;
    let history = this.outputHistory;
    const last = history.points.at(-1);
    // another time base, time or count going back: what was kept is no measure of this child now
    if (history.clock !== clock || (last !== undefined && (timeNs <= last.timeNs || packets < last.packets))) {
      history = this.outputHistory = { clock, points: [] };
    }
    history.points.push({ timeNs, packets });
    const from = timeNs - OUTPUT_RATE_WINDOW_MS * 1e6;
    while (history.points.length > 2 && (history.points[1]?.timeNs ?? Infinity) <= from) history.points.shift();
  }

  /**
   * RTP packets the current child sent per second of its own running time, over the last
   * OUTPUT_RATE_WINDOW_MS (less while it is younger); undefined before two reports of it.
   */
  outputPacketRate(): number | undefined {
    const points = this.outputHistory.points;
    const first = points[0];
    const last = points.at(-1);
    if (first === undefined || last === undefined || last.timeNs <= first.timeNs) return undefined;
    return ((last.packets - first.packets) * 1e9) / (last.timeNs - first.timeNs);
  }

  /** Takes a child's cumulative counts; a count that went down (a new SRT connection) starts a new run. */
  private count(event: PipelineStatsEvent): void {
    const next: Partial<PipelineCounts> = {};
    if (event.srt !== undefined) {
      next.srtPacketsReceived = event.srt.packetsReceived;
      next.srtPacketsLost = event.srt.packetsLost;
      next.srtPacketsRetransmitted = event.srt.packetsRetransmitted;
      next.srtPacketsDropped = event.srt.packetsDropped;
      next.srtBytesReceived = event.srt.bytesReceived;
    }
    if (event.output !== undefined) {
      next.outputPackets = event.output.packets;
      next.outputBytes = event.output.bytes;
    }
    for (const name of COUNT_NAMES) {
      const value = next[name];
      if (value === undefined || !Number.isFinite(value) || value < 0) continue;
      if (value < this.current[name]) this.base[name] += this.current[name];
      this.current[name] = value;
    }
  }

  /** The bridge's cumulative under/overruns of this child (they only restart with a new child). */
  private countBridge(event: ClockBridgeEvent): void {
    if (Number.isFinite(event.underruns) && event.underruns >= this.current.bridgeUnderruns) this.current.bridgeUnderruns = event.underruns;
    if (Number.isFinite(event.overruns) && event.overruns >= this.current.bridgeOverruns) this.current.bridgeOverruns = event.overruns;
    const inserted = event.insertedSilenceSeconds;
    if (Number.isFinite(inserted) && inserted >= this.current.bridgeInsertedSilence) this.current.bridgeInsertedSilence = inserted;
    const demoted = event.realtimeDemotions;
    if (demoted !== undefined && Number.isFinite(demoted) && demoted >= this.current.bridgeRealtimeDemotions) this.current.bridgeRealtimeDemotions = demoted;
    const hits = event.ceilingHits;
    if (hits !== undefined && Number.isFinite(hits) && hits >= this.current.bridgeCeilingHits) this.current.bridgeCeilingHits = hits;
    const atCeiling = event.ceilingUnderruns;
    if (atCeiling !== undefined && Number.isFinite(atCeiling) && atCeiling >= this.current.bridgeCeilingUnderruns) this.current.bridgeCeilingUnderruns = atCeiling;
  }

  /** Every count summed over the pipeline's life. */
  counts(): PipelineCounts {
    const out = zeroCounts();
    for (const name of COUNT_NAMES) out[name] = this.base[name] + this.current[name];
    return out;
  }

  /** RMS and peak of each input channel, dBFS, floored at NO_SIGNAL_DB; the floor without a current report. */
  inputLevels(): { rmsDb: number[]; peakDb: number[] } {
    const channels = Math.max(INPUT_CHANNELS, this.level?.rmsDb.length ?? 0);
    const pick = (values: number[] | undefined): number[] => Array.from({ length: channels }, (_, i) => floorDb(values?.[i] ?? NO_SIGNAL_DB));
    return { rmsDb: pick(this.level?.rmsDb), peakDb: pick(this.level?.peakDb) };
  }

  /** Each loudness step's current values ("no signal" before its first report), by element name. */
  loudnessSteps(): [string, LoudnessValues][] {
    const names = [...new Set([...this.layout.loudnessSteps, ...this.loudness.keys()])];
    return names.map((name) => {
      const event = this.loudness.get(name);
      return [name, event === undefined ? NO_LOUDNESS : event];
    });
  }

  /**
   * SRT connection values of the current child; not connected, 0 RTT and rate without one.
   * Undefined exactly when the graph has no SRT input (the layout decides, not the reports, so
   * the SRT series of a pipeline never come and go).
   */
  srtNow(): { connected: boolean; rttMs: number; receiveRateMbps: number } | undefined {
    if (!this.layout.srtInput) return undefined;
    const srt = this.transport?.srt;
    if (srt === undefined) return { connected: false, rttMs: 0, receiveRateMbps: 0 };
    return { connected: srt.connected, rttMs: srt.connected ? srt.rttMs : 0, receiveRateMbps: srt.connected ? srt.receiveRateMbps : 0 };
  }

  /**
   * Fill of the jitter buffer against the fill it keeps: the clock bridge's FIFO over its setpoint
   * (1 = steady, 0 = empty; 0 while the setpoint is 0); undefined (unknown) without a current
   * bridge report.
   */
  bufferFill(): number | undefined {
    if (this.clock === undefined) return undefined;
    return this.clock.setpointSeconds > 0 ? this.clock.fillSeconds / this.clock.setpointSeconds : 0;
  }

  /** Audio is flowing and above the silence threshold on some channel. */
  private hasSignal(now: number): boolean {
    const fresh = this.levelAt !== undefined && now - this.levelAt <= 2.5 * this.intervalMs;
    return fresh && (this.level?.rmsDb.some((db) => db >= SILENCE_DBFS) ?? false);
  }

  private updateSilence(now: number): void {
    if (this.hasSignal(now)) this.silentSince = undefined;
    else this.silentSince ??= now;
  }

  silenceSeconds(now: number): number {
    this.updateSilence(now);
    return this.silentSince === undefined ? 0 : (now - this.silentSince) / 1000;
  }

  /**
   * `waiting`: no input reaches the clock bridge (no caller, or a caller that sends nothing
   * decodable) — the output carries silence meanwhile; `silent`: input arrives but has been
   * below the silence threshold for 5 s; `receiving` otherwise. Input arrives from the first
   * bridge report that saw input frames until INPUT_HOLD_MS of the child's running time have
   * passed without one, and, for an SRT input, only while a caller is connected (a caller leaving
   * is `waiting` at once). Before the bridge's first report the SRT connection decides.
   */
  report(now: number): InputReport {
    const connected = this.transport?.srt?.connected ?? false;
    const silence = this.silenceSeconds(now);
    const state: InputState = !this.inputArriving(connected) ? 'waiting' : silence * 1000 >= SILENCE_REPORT_MS ? 'silent' : 'receiving';
    return { input_state: state, silence_seconds: Math.round(silence * 10) / 10, srt_connected: connected };
  }

  private inputArriving(connected: boolean): boolean {
    // the SRT caller left (the child's report says so): nothing more can arrive
    if (this.layout.srtInput && this.transport?.srt?.connected === false) return false;
    if (this.bridgeAt === undefined) return connected;
    return this.inputSeenNs !== undefined && this.bridgeAt.timeNs - this.inputSeenNs < INPUT_HOLD_MS * 1e6;
  }

  /**
   * The drift and its uncertainty, ppm: the bridge's estimate from about 10 s of input on; from an
   * element without one its report (null while unknown) and no uncertainty.
   */
  drift(): { drift_ppm: number | null; drift_uncertainty_ppm: number | null } {
    const c = this.clock;
    const known = (ppm: number | undefined): number | null => (ppm !== undefined && Number.isFinite(ppm) ? ppm : null);
    if (c === undefined) return { drift_ppm: null, drift_uncertainty_ppm: null };
    if (c.driftEstimatePpm === undefined) return { drift_ppm: known(c.driftPpm), drift_uncertainty_ppm: null };
    const uncertainty = known(c.driftUncertaintyPpm);
    const estimate = uncertainty === null ? null : known(c.driftEstimatePpm);
    return { drift_ppm: estimate, drift_uncertainty_ppm: estimate === null ? null : uncertainty };
  }

  /** The clock bridge's state; undefined before its first report. `inputLatencyMs`: SRT latency (0 for other inputs). */
  clockReport(inputLatencyMs: number): ClockReport | undefined {
    const c = this.clock;
    if (c === undefined) return undefined;
    const drift = this.drift();
    return {
      drift_ppm: round2(drift.drift_ppm),
      drift_uncertainty_ppm: round2(drift.drift_uncertainty_ppm),
      jitter_buffer_seconds: Math.round(c.fillSeconds * 1e5) / 1e5,
      jitter_target_seconds: Math.round(c.targetSeconds * 1e5) / 1e5,
      jitter_setpoint_seconds: Math.round(c.setpointSeconds * 1e5) / 1e5,
      jitter_depth_seconds: c.depthSeconds === undefined ? null : Math.round(c.depthSeconds * 1e5) / 1e5,
      jitter_ceiling_seconds: c.ceilingSeconds === undefined ? null : Math.round(c.ceilingSeconds * 1e5) / 1e5,
      ceiling_hits: this.base.bridgeCeilingHits + this.current.bridgeCeilingHits,
      // Summed over the pipeline's children, like the metrics' counters.
      underruns: this.base.bridgeUnderruns + this.current.bridgeUnderruns,
      overruns: this.base.bridgeOverruns + this.current.bridgeOverruns,
      inserted_silence_seconds: Math.round((this.base.bridgeInsertedSilence + this.current.bridgeInsertedSilence) * 1e4) / 1e4,
      latency_seconds: Math.round((inputLatencyMs / 1000 + c.latencySeconds) * 1e5) / 1e5,
      output_realtime: c.outputRealtime ?? null,
      input_realtime: c.inputRealtime ?? null,
    };
  }

  private countRefused(event: Extract<SrtAccessEvent, { event: 'rejected' }>): void {
    const input = event.element === BACKUP_ACCESS ? 'backup' : 'main';
    const cause = event.busy ? 'busy' : event.rejectCode === SRT_REJ_BADSECRET || event.rejectCode === SRT_REJ_UNSECURE ? 'passphrase' : 'other';
    const key = `${input}>${cause}`;
    const entry = this.refusedCallers.get(key) ?? { input, cause, count: 0 };
    entry.count += 1;
    this.refusedCallers.set(key, entry);
  }

  /** Every caller an SRT input refused so far (all children), by input and cause. */
  refusedCallerCounts(): RefusedCallerCount[] {
    return [...this.refusedCallers.values()];
  }

  /** Every switch of the bridge so far (all children), by from, to and reason. */
  failoverCounts(): FailoverCount[] {
    return [...this.failovers.values()];
  }

  /** The current child's failover state; undefined before its first report (or from an element without failover). */
  failoverState(): NonNullable<ClockBridgeEvent['failover']> | undefined {
    return this.clock?.failover;
  }

  /** The view's failover fields: backup only when the graph has one. */
  failoverView(): FailoverView {
    const state = this.failoverState();
    return {
      active_input: state?.activeInput ?? null,
      inputs: {
        main: healthView(state?.main),
        ...(this.layout.backupInput === true ? { backup: healthView(state?.backup) } : {}),
      },
    };
  }

  /** The selection the child reports (null before its first report). */
  reportedSelection(): Selection | null {
    return this.clock?.failover?.selection ?? null;
  }
}
