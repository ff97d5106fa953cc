/**
 * The graph compiler: a pure function from a validated pipeline spec to the argv of
 * `gst-launch-1.0`. It is the only place that writes a pipeline description, and it writes
 * only validated numbers, enum values and addresses, each property its own argv token.
 *
 *   srtsrc (listener, keeps listening) ! typefind ! tsdemux ! <audio caps> ! decodebin ! audioconvert
 *     ! audioresample ! F32 48 kHz, the output's channels
 *     ! clockbridge (its `level` messages: the input meter) ! <processing steps in order>
 *     ! l24pack ! rtpL24pay | audioconvert ! rtpL16pay (ptime)
 *     ! rtpbatch (media-clock RTP timestamps) ! udpsink name=out (qos-dscp)
 *   with a redundant leg (ST 2022-7): ... ! rtpbatch ! tee name=legs ! udpsink name=out ...
 *     legs. ! udpsink name=out2 (the leg's host, port, interface; the output's TTL and DSCP)
 *   a leg switched off (output.enabled, the leg's enabled) has `valve name=gate|gate2 drop=true`
 *     before its udpsink; a leg that sends has none
 *   pipelinestats (unlinked: reads the counters of src, pay and out every interval)
 *   srtaccess (unlinked, SRT input only: the passphrase from fd 3 onto src; refused callers)
 *   enginecontrol (unlinked: the control channel on fd 4, live changes of the steps' parameters)
 *
 * The processing caps carry the output's channel count (1-8); the output options (encoding,
 * ptime, payload type, DSCP) are described in docs/aes67.md.
 *
 * Two clock domains (docs/clock.md). Up to the clock bridge the graph runs on the sender's clock:
 * nothing there waits on a clock, buffers pass as fast as SRT delivers them (so tsdemux's
 * `latency` and the sender's PTS lead no longer delay anything: the bridge answers the latency
 * query with its own latency and does not ask upstream). The bridge keeps a FIFO at
 * `engine.jitter_ms`, steers an adaptive resampler to the sender's rate, and from there the graph
 * runs on the pipeline clock the bridge provides (`clock.source`): one chunk of
 * `rtp_packets_per_send` ms at a time, silence when no input comes, so the RTP stream never stops
 * while the child lives. rtpbatch stamps each packet with the clock time its first sample leaves.
 *
 * SRT carries MPEG-TS. tsdemux is written out rather than left to decodebin: decodebin would put a
 * multiqueue (one more thread, woken for every frame) behind its demuxer, and would decode every
 * stream of the transport stream, video too. The caps filter after tsdemux links its first audio
 * stream; decodebin then only parses and decodes that elementary stream, in the SRT thread.
 * typefind before tsdemux turns what tsdemux would swallow into errors, as decodebin's own typefind
 * did: an EOS before any data (a stop while no caller is connected: tsdemux has no pad to pass it
 * on, and the child would never end) is "Stream doesn't contain enough data", and a caller sending
 * something other than MPEG-TS is not-negotiated, instead of silence.
 *
 * Stations with an Icecast harbor start with `fdsrc fd=0` instead of srtsrc: the engine writes the
 * source client's body (MP3, Ogg, AAC) to the child's stdin and decodebin finds its format, inside
 * our `chaindecode`, which keeps one src pad linked when a new Ogg chain begins. That
 * input is internal (`StdinInput`): the REST/gRPC schema has no such type, only a station builds it.
 *
 * The bridge's `level` messages (`meter-interval`) measure the input as it leaves the bridge (after
 * decoding and failover, before processing), with GStreamer's level's figures: no level element
 * in the output thread (docs/elements-clockbridge.md). loudnorm reports loudness in and out.
 * Element names are fixed: the statistics parser and pipelinestats rely on them.
 */
import { DEFAULT_PBKEYLEN, type PipelineSpec, type ProcessingStep } from '../spec/schema.js';
import { isMulticast } from '../spec/host.js';
import { PTIME_SAMPLES, RTP_SOURCE_PORT } from '../spec/rtp-format.js';
import { CAPS, element, processingCaps, UnsafeValueError } from './elements.js';
import type { PipelineStatsLayout } from '../stats/pipeline-stats.js';

/** Internal input: the child reads the encoded stream from its stdin (fd 0). */
export interface StdinInput {
  type: 'stdin';
}

/** What the compiler accepts: a validated pipeline spec, or the same with the internal stdin input. */
export interface CompilableSpec {
  input: PipelineSpec['input'] | StdinInput;
  /** A second SRT input on the bridge's `backup` pad, decoding all the time (hot standby). */
  backup?: PipelineSpec['backup'];
  /** The fallback file as the user gave it (compared by the update plan; the child reads `fallbackFile`). */
  fallback?: PipelineSpec['fallback'];
  /** The input forced on air (absent: auto); the bridge's `select`. */
  selection?: PipelineSpec['selection'];
  /** When the bridge switches (defaults filled by the validator); only compiled with a backup or fallback. */
  failover?: PipelineSpec['failover'];
  /**
   * The engine's decoded copy of `fallback` (raw F32LE, 48 kHz, the output's channels) in its state
   * dir: the bridge's `fallback-file` (pipelines/fallback-cache.ts). Not part of the user's spec.
   */
  fallbackFile?: string;
  processing: PipelineSpec['processing'];
  output: PipelineSpec['output'];
  /** The ceiling of the bridge's setpoint (absent: engine.jitter_max_ms). */
  jitter_max_ms?: PipelineSpec['jitter_max_ms'];
}

export interface CompileOptions {
  /** Period of the transport statistics (pipelinestats: SRT link, buffer, output counters), ms. */
  statsIntervalMs: number;
  /**
   * Period of the meters (the bridge's level and loudnorm's messages), ms; the dashboard's 10 Hz meters want
   * 100. Defaults to statsIntervalMs.
   */
  meterIntervalMs?: number;
  /**
   * RTP packets (1 ms each) the sink sends per wake-up. 1: one packet every millisecond, each on
   * time. N > 1: `rtpbatch` before udpsink groups N packets into a list that udpsink sends at
   * the first one's time, so the last leaves N - 1 ms early, and the child wakes N times less.
   */
  packetsPerSend: number;
  /** config clock.source: the pipeline clock the bridge provides (`tai`, `realtime`, `/dev/ptpN`). */
  clockSource: string;
  /** config engine.jitter_ms: the bridge's target FIFO fill. */
  jitterMs: number;
  /** config engine.jitter_max_ms: the ceiling of the bridge's setpoint (a pipeline's jitter_max_ms first); absent: the element's own (jitter + 0.5 s). */
  jitterMaxMs?: number;
}

const MS = 1_000_000; // ns per ms

/** gst-launch options before the description: -m prints bus messages (stats), -e ends on EOS at SIGINT. */
export const GST_LAUNCH_OPTIONS = ['-m', '-f', '-e', '--'] as const;

export function compileStep(step: ProcessingStep, index: number, options: CompileOptions): string[] {
  const name = `step${index}`;
  switch (step.plugin) {
    case 'loudness-normalize':
      return element('loudnorm', {
        name,
        target: step.target,
        'true-peak': step.true_peak,
        interval: (options.meterIntervalMs ?? options.statsIntervalMs) * MS,
      });
    case 'eq':
      return element('parametriceq', { name, bands: step.bands });
    default: {
      const unknown: never = step;
      throw new Error(`no compiler for processing step ${JSON.stringify(unknown)}`);
    }
  }
}

/** The backup input's source element: its other elements carry the same suffix (`demux2`, ...). */
export const BACKUP_SOURCE = 'src2';

/** The input and its decoder: everything before audioconvert. `suffix` names a second input's elements. */
export function compileInput(input: CompilableSpec['input'], suffix = ''): string[][] {
  switch (input.type) {
    case 'srt':
      return [
        element('srtsrc', {
          name: `src${suffix}`,
          mode: 'listener',
          localaddress: '0.0.0.0',
          localport: input.port,
          latency: input.latency,
          'poll-timeout': 100,
          // A caller leaving is not the end of the stream: srtsrc waits for the next one and the
          // bridge sends silence meanwhile (docs/clock.md).
          'keep-listening': true,
          'wait-for-connection': true,
          // The key length only; the passphrase comes through srtaccess (compileAccess).
          pbkeylen: input.passphrase === undefined ? undefined : String(input.pbkeylen ?? DEFAULT_PBKEYLEN),
        }),
        element('typefind', { name: `typefind${suffix}` }),
        element('tsdemux', { name: `demux${suffix}` }),
        [CAPS.audioInTransportStream],
        // ADTS AAC leaves as raw frames the moment each is complete: decodebin's aacparse held
        // every frame smaller than one it saw at sync until the next came (21.3 ms, docs/clock.md).
        element('aacframer', { name: `framer${suffix}` }),
        element('decodebin', { name: `decode${suffix}` }),
      ];
    case 'stdin':
      // chaindecode (gst-plugins/src/chain): decodebin behind one src pad that follows a new
      // chain of the stream (chained Ogg: liquidsoap %vorbis titles, ezstream and ices2 tracks).
      return [element('fdsrc', { name: 'src', fd: 0, blocksize: 4096 }), element('chaindecode', { name: 'decode' })];
    default: {
      const unknown: never = input;
      throw new Error(`no compiler for input ${JSON.stringify(unknown)}`);
    }
  }
}

/** The descriptor on which the child reads the SRT passphrase (see `compileSecrets`). */
export const PASSPHRASE_FD = 3;
/** The descriptor of the backup input's passphrase (after CONTROL_FD). */
export const BACKUP_PASSPHRASE_FD = 5;

/**
 * What the child reads from its descriptors 3, 4, ... (in this order), the secrets its argv
 * only names by number: the SRT passphrase, read by `srtaccess passphrase-fd=3` before srtsrc
 * opens its socket, and the backup's on fd 5 (`access2`). The supervisor passes each as a pipe
 * that holds these bytes and then ends; a null slot is a closed descriptor (fd 4 is the control
 * channel's).
 */
export function compileSecrets(spec: CompilableSpec): (Uint8Array | null)[] {
  const input = spec.input;
  const main = input.type === 'srt' && input.passphrase !== undefined ? new TextEncoder().encode(input.passphrase) : null;
  const backup = spec.backup?.passphrase;
  if (backup !== undefined) return [main, null, new TextEncoder().encode(backup)];
  return main === null ? [] : [main];
}

/**
 * The SRT input's access element, unlinked like pipelinestats: it reports callers libsrt refuses
 * (`srtaccess` messages), with a passphrase reads it from its descriptor onto srtsrc, and puts a
 * caller that calls again in place of a connection idle for `reconnect_ms` (its `reconnect-ms`,
 * left to the element's default of the same value when the spec names none).
 */
function compileAccess(input: CompilableSpec['input'], suffix = '', fd = PASSPHRASE_FD): string[] {
  if (input.type !== 'srt') return [];
  return element('srtaccess', {
    name: `access${suffix}`,
    source: `src${suffix}`,
    'passphrase-fd': input.passphrase === undefined ? undefined : fd,
    'reconnect-ms': input.reconnect_ms,
  });
}

const S = 1_000_000_000; // ns per s

/** The policy's defaults, which are also the element's (docs/failover.md). */
export const DEFAULT_FAILOVER: NonNullable<PipelineSpec['failover']> = {
  silence_dbfs: -50,
  silence_s: 10,
  loss_ms: 300,
  return_s: 10,
  fallback_on_silence: false,
};

/** A policy as the bridge's properties (ns, dBFS); none given: the defaults. */
export function bridgeFailoverProperties(policy: PipelineSpec['failover'] = DEFAULT_FAILOVER) {
  return {
    'failover-loss': policy.loss_ms * MS,
    'failover-silence-level': policy.silence_dbfs,
    'failover-silence': Math.round(policy.silence_s * S),
    'failover-return': Math.round(policy.return_s * S),
    'fallback-on-silence': policy.fallback_on_silence,
  };
}

/**
 * The bridge's failover properties: the policy only with a backup or a fallback and a policy, the
 * fallback's decoded copy when there is one (a graph without either reads as before).
 */
function failoverProperties(spec: CompilableSpec): Partial<ReturnType<typeof bridgeFailoverProperties> & { 'fallback-file': string }> {
  const policy = (spec.backup === undefined && spec.fallback === undefined) || spec.failover === undefined ? {} : bridgeFailoverProperties(spec.failover);
  return spec.fallbackFile === undefined ? policy : { 'fallback-file': spec.fallbackFile, ...policy };
}

/**
 * The backup input's own chain, linked to the bridge's `backup` request pad: its own SRT listener,
 * demuxer, decoder and converters (names suffixed 2), decoding all the time.
 */
function compileBackup(spec: CompilableSpec): string[] {
  if (spec.backup === undefined) return [];
  const stages: string[][] = [
    ...compileInput(spec.backup, '2'),
    element('audioconvert', { name: 'inconvert2' }),
    element('audioresample', { name: 'resample2' }),
    [processingCaps(spec.output.channels)],
    ['bridge.backup'],
  ];
  return [
    ...stages.flatMap((tokens, i) => (i === 0 ? tokens : ['!', ...tokens])),
    ...compileAccess(spec.backup, '2', BACKUP_PASSPHRASE_FD),
  ];
}

/**
 * ns of one packet: the packet's samples at 48 kHz, rounded up (rtpbasepayload takes the whole
 * samples that fit in min-ptime: 333333 ns would give 15 samples, 333334 gives 16; measured).
 */
export function ptimeNs(ptime: PipelineSpec['output']['ptime']): number {
  return Math.ceil((PTIME_SAMPLES[ptime] * 1_000_000_000) / 48_000);
}

/**
 * rtpbatch for `packetsPerSend` (counted in 1 ms packets): the same wake-up period whatever the
 * packet time, so packets = round(packetsPerSend / ptime) within 1-16. 4 at 1 ms: 4 packets per
 * send; 4 at 0.25 ms: 16; 4 at 4 ms: 1. Always in the graph: it writes the AES67 media-clock RTP
 * timestamps (packets = 1 passes each packet on by itself).
 */
export function batcher(packetsPerSend: number, ptime: PipelineSpec['output']['ptime']): string[] {
  if (!Number.isSafeInteger(packetsPerSend) || packetsPerSend < 1 || packetsPerSend > 16) {
    throw new UnsafeValueError('rtpbatch', 'packets', packetsPerSend);
  }
  const packets = Math.min(16, Math.max(1, Math.round(packetsPerSend / ptime)));
  return element('rtpbatch', { name: 'batch', packets, 'media-clock': true });
}

/**
 * The last step's F32 to the payloader's format. L24: our l24pack writes the bytes audioconvert
 * would, in one pass (per 4 ms chunk 5 100 instructions where audioconvert took 9 900;
 * docs/elements-l24pack.md). L16: audioconvert, which dithers at 16 bits.
 */
function outputConverter(output: PipelineSpec['output']): string[] {
  return element(output.encoding === 'L24' ? 'l24pack' : 'audioconvert', { name: 'outconvert' });
}

/** rtpL24pay or rtpL16pay with the output's payload type and packet time. */
export function payloader(output: PipelineSpec['output']): string[] {
  const ns = ptimeNs(output.ptime);
  const properties = { name: 'pay', pt: output.payload_type, 'min-ptime': ns, 'max-ptime': ns };
  switch (output.encoding) {
    case 'L24':
      return element('rtpL24pay', properties);
    case 'L16':
      return element('rtpL16pay', properties);
    default: {
      const unknown: never = output.encoding;
      throw new Error(`no payloader for encoding ${JSON.stringify(unknown)}`);
    }
  }
}

/**
 * The descriptor of the child's control channel: a socket the engine keeps open for the child's
 * life and writes property commands to (supervisor/control-channel.ts). After PASSPHRASE_FD,
 * which is closed when the pipeline has no passphrase.
 */
export const CONTROL_FD = 4;

/** The control element, unlinked: sets the steps' (`stepN`) parameters while playing. */
function compileControl(): string[] {
  return element('enginecontrol', { name: 'control', fd: CONTROL_FD });
}

/**
 * The udpsink of one leg. `primary`: the output's own destination, named `out` (what the stats
 * read). A redundant leg's sink `out2` never prerolls (async=false): the tee feeds it from the
 * same streaming thread right after `out` has waited for the packet's time, so it sends at once
 * and never blocks `out`'s preroll.
 */
function udpsink(output: PipelineSpec['output'], leg: { name: string; host: string; port: number; interface: string | undefined }, asyncPreroll: boolean): string[] {
  return element('udpsink', {
    name: leg.name,
    host: leg.host,
    port: leg.port,
    'ttl-mc': output.ttl,
    'multicast-iface': leg.interface,
    'auto-multicast': true,
    'qos-dscp': output.dscp,
    sync: true,
    // The graph's processing margin is the bridge's own (its LATENCY answer: one chunk + LATENCY_MARGIN, 1 ms);
    // udpsink's default deadline would add 20 ms to every packet's delay.
    'processing-deadline': 0,
    // A live SRT graph must not wait for preroll. A stdin graph: with async=false, before the
    // bridge, its EOS (the source left) was lost in about 1 run of 3 and the child never exited
    // (GStreamer 1.22, measured); async=true ended it every time, and still does with the bridge.
    async: asyncPreroll,
    // A known source port (IS-05 source_port) instead of an ephemeral one.
    'bind-port': RTP_SOURCE_PORT,
  });
}

/** The udpsink of each output leg, by leg: what the statistics and the leg states read. */
export const LEG_SINKS = { primary: 'out', redundant: 'out2' } as const;
export type OutputLegName = keyof typeof LEG_SINKS;

/** The leg a sink sends, or undefined for another element. */
export function legOfSink(sink: string): OutputLegName | undefined {
  return (Object.keys(LEG_SINKS) as OutputLegName[]).find((leg) => LEG_SINKS[leg] === sink);
}

/** A leg whose sink sends from a named interface (udpsink's multicast-iface): the link the engine watches. */
export interface LegInterface {
  sink: string;
  interface: string;
}

/**
 * The interfaces the output's legs send from: each multicast leg with an `interface` (what its
 * udpsink's multicast-iface gets). A unicast leg's route picks its interface, and a leg without
 * one sends where the host's routes say: neither names an interface to watch.
 */
export function legInterfacesOf(output: PipelineSpec['output']): LegInterface[] {
  const legs: LegInterface[] = [];
  if (output.interface !== undefined && isMulticast(output.host)) legs.push({ sink: LEG_SINKS.primary, interface: output.interface });
  const second = output.redundant;
  if (second?.interface !== undefined && isMulticast(second.host)) legs.push({ sink: LEG_SINKS.redundant, interface: second.interface });
  return legs;
}

/** Whether a leg sends: the output on (`enabled` absent or true) and the leg itself on. */
export function legSends(output: PipelineSpec['output'], leg: OutputLegName): boolean {
  if (output.enabled === false) return false;
  return leg === 'primary' || output.redundant?.enabled !== false;
}

/**
 * A leg's sink, and before it, only when the leg is switched off, a closed valve (`gate`,
 * `gate2`) that drops every packet but forwards sticky events (caps, segment, EOS: the child
 * still stops cleanly). Set at launch only: switching a leg restarts the child
 * (compiler/update.ts), so a leg that sends has exactly its udpsink.
 */
function legSink(output: PipelineSpec['output'], leg: OutputLegName, sink: string[]): string[] {
  if (legSends(output, leg)) return sink;
  const name = leg === 'primary' ? 'gate' : 'gate2';
  return [...element('valve', { name, drop: true, 'drop-mode': 'forward-sticky-events' }), '!', ...sink];
}

/**
 * The output's sinks: one udpsink, or for an ST 2022-7 output a tee with a sink per leg, so
 * every packet (the same buffer: SSRC, sequence number, timestamp and payload) goes out on both.
 * A leg that is switched off has a closed valve before its sink.
 */
function compileSinks(output: PipelineSpec['output'], stdin: boolean): string[] {
  const primary = legSink(output, 'primary', udpsink(output, { name: LEG_SINKS.primary, host: output.host, port: output.port, interface: output.interface }, stdin));
  const leg = output.redundant;
  if (leg === undefined) return primary;
  const second = legSink(output, 'redundant', udpsink(output, { name: LEG_SINKS.redundant, host: leg.host, port: leg.port ?? output.port, interface: leg.interface }, false));
  return [...element('tee', { name: 'legs' }), '!', ...primary, 'legs.', '!', ...second];
}

export function compilePipeline(spec: CompilableSpec, options: CompileOptions): string[] {
  const link = '!';
  const interval = options.statsIntervalMs * MS;
  const meterInterval = (options.meterIntervalMs ?? options.statsIntervalMs) * MS;
  // A station's Icecast (stdin) input can wait: its sources send Ogg pages of up to a second and
  // faster than real time when they catch up, so the bridge holds the pipe back when its FIFO is
  // full instead of dropping audio (pace-input; docs/clock.md). An SRT caller cannot wait.
  const paced = spec.input.type === 'stdin';
  const stages: string[][] = [
    ...compileInput(spec.input),
    element('audioconvert', { name: 'inconvert' }),
    element('audioresample', { name: 'resample' }),
    [processingCaps(spec.output.channels)],
    // The clock bridge: everything before it runs on the sender's clock, as fast as data comes;
    // everything after it on the pipeline clock it provides, one chunk per packets-per-send.
    element('clockbridge', {
      name: 'bridge',
      'clock-source': options.clockSource,
      jitter: options.jitterMs * MS,
      // The setpoint's ceiling: the bound of the bridge's part of the latency.
      'jitter-max': (spec.jitter_max_ms ?? options.jitterMaxMs ?? 0) * MS || undefined,
      chunk: options.packetsPerSend * MS,
      interval,
      // The input meter: `level` messages, as GStreamer's level after the bridge posted them.
      'meter-interval': meterInterval,
      channels: spec.output.channels,
      'pace-input': paced ? true : undefined, // only where it is on: SRT graphs read as before
      ...failoverProperties(spec),
      select: spec.selection, // absent (auto): not written, a graph reads as before
    }),
    ...spec.processing.map((step, index) => compileStep(step, index, options)),
    outputConverter(spec.output),
    payloader(spec.output),
    batcher(options.packetsPerSend, spec.output.ptime),
    compileSinks(spec.output, spec.input.type === 'stdin'),
  ];
  const chain = stages.flatMap((tokens, i) => (i === 0 ? tokens : [link, ...tokens]));
  // The jitter buffer's state comes from the bridge's own message, not from pipelinestats.
  const stats = element('pipelinestats', { name: 'stats', interval, source: 'src', payloader: 'pay', sink: 'out' });
  return [...GST_LAUNCH_OPTIONS, ...chain, ...stats, ...compileAccess(spec.input), ...compileControl(), ...compileBackup(spec)];
}

/**
 * Everything the supervisor and the pipeline's statistics need of a compiled spec, made once
 * from the spec (nothing reads it back out of the argv): the child's argv, what it reads from
 * descriptors 3, 4, ... (compileSecrets), the output legs whose interfaces are watched, and what
 * the child will report (its loudness steps, an SRT input, a backup input).
 */
export interface PipelinePlan {
  argv: string[];
  secrets: (Uint8Array | null)[];
  legInterfaces: LegInterface[];
  statsLayout: PipelineStatsLayout;
}

export function compilePlan(spec: CompilableSpec, options: CompileOptions): PipelinePlan {
  return {
    argv: compilePipeline(spec, options),
    secrets: compileSecrets(spec),
    legInterfaces: legInterfacesOf(spec.output),
    statsLayout: {
      // compileStep names each step `step<index>`
      loudnessSteps: spec.processing.flatMap((step, index) => (step.plugin === 'loudness-normalize' ? [`step${index}`] : [])),
      srtInput: spec.input.type === 'srt',
      backupInput: spec.backup !== undefined,
    },
  };
}
