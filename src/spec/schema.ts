/**
 * The pipeline spec: the one definition of what a client may ask for. REST and gRPC requests
 * are both validated against it (spec/validate.ts); the TypeScript types come from it.
 * Units and ranges: docs/api.md and the contract's decisions.md.
 */
import { Type, type Static } from '@sinclair/typebox';
import { INTERFACE_NAME_PATTERN } from '../net/interface-name.js';

/** Plugin names of the processing steps, as clients write them. */
export const PLUGINS = ['loudness-normalize', 'eq'] as const;
export type PluginName = (typeof PLUGINS)[number];

const strict = { additionalProperties: false } as const;

/** SRT key lengths in bytes (AES-128, -192, -256), as srtsrc's `pbkeylen` takes them. */
export const PBKEYLENS = [16, 24, 32] as const;
export type Pbkeylen = (typeof PBKEYLENS)[number];
/** The key length a pipeline with a passphrase gets when the request names none: libsrt's own default. */
export const DEFAULT_PBKEYLEN: Pbkeylen = 16;

/** A caller idle this long (ms) gives way to a new one; the srtaccess element's own default. */
export const DEFAULT_RECONNECT_MS = 500;
export const MIN_RECONNECT_MS = 50;
export const MAX_RECONNECT_MS = 10_000;

export const SrtInput = Type.Object(
  {
    type: Type.Literal('srt'),
    port: Type.Integer({ minimum: 1024, maximum: 65535, description: 'UDP port the SRT listener binds' }),
    latency: Type.Integer({ minimum: 20, maximum: 8000, default: 120, description: 'SRT latency, ms' }),
    // SRT's own limits (SRTO_PASSPHRASE: 10-79 bytes); printable ASCII, so characters are bytes.
    // A secret: stored in a 0600 record, handed to the child through a pipe (never its argv or
    // environment), shown as "set" in every view (docs/api.md).
    passphrase: Type.Optional(
      Type.String({ minLength: 10, maxLength: 79, pattern: '^[\\x20-\\x7E]*$', description: 'SRT passphrase: callers must use it' }),
    ),
    pbkeylen: Type.Optional(
      Type.Unsafe<Pbkeylen>({ type: 'integer', enum: [...PBKEYLENS], description: 'SRT key length, bytes; default 16 with a passphrase' }),
    ),
    // docs/failover.md "A caller that calls again": the srtaccess element's reconnect-ms.
    reconnect_ms: Type.Optional(
      Type.Integer({
        minimum: MIN_RECONNECT_MS,
        maximum: MAX_RECONNECT_MS,
        description: `A new caller replaces the connected one once that has delivered nothing for this long, ms; default ${DEFAULT_RECONNECT_MS}`,
      }),
    ),
  },
  { ...strict, dependencies: { pbkeylen: ['passphrase'] } },
);

export const LoudnessNormalizeStep = Type.Object(
  {
    plugin: Type.Literal('loudness-normalize'),
    target: Type.Number({ minimum: -70, maximum: -5, description: 'integrated loudness target, LUFS' }),
    true_peak: Type.Number({ minimum: -9, maximum: 0, default: -1, description: 'true-peak ceiling, dBTP' }),
  },
  strict,
);

export const EqBand = Type.Object(
  {
    freq: Type.Number({ minimum: 20, maximum: 20000, description: 'centre frequency, Hz' }),
    gain: Type.Number({ minimum: -24, maximum: 24, description: 'gain at the centre, dB' }),
    q: Type.Number({ minimum: 0.1, maximum: 30, default: 1, description: 'RBJ cookbook Q' }),
  },
  strict,
);

export const EqStep = Type.Object(
  {
    plugin: Type.Literal('eq'),
    bands: Type.Array(EqBand, { minItems: 1, maxItems: 16 }),
  },
  strict,
);

/**
 * A processing step, chosen by its `plugin` field. Written as oneOf + discriminator (not a
 * plain union) so that a validation error names the field of the chosen plugin, not "must
 * match a schema in anyOf".
 */
export const ProcessingStep = Type.Unsafe<Static<typeof LoudnessNormalizeStep> | Static<typeof EqStep>>({
  type: 'object',
  properties: { plugin: { type: 'string' } },
  required: ['plugin'],
  discriminator: { propertyName: 'plugin' },
  oneOf: [LoudnessNormalizeStep, EqStep],
});

/**
 * The second leg of an ST 2022-7 output: the same packets to another destination, from another
 * interface. `port` defaults to the output's port (filled after the schema: spec/rtp-output.ts).
 */
export const RedundantLeg = Type.Object(
  {
    host: Type.String({ format: 'engine-host', description: 'IPv4/IPv6 literal (unicast or multicast) or DNS name' }),
    port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535, description: 'default: the output\'s port' })),
    interface: Type.Optional(
      Type.String({ pattern: INTERFACE_NAME_PATTERN, description: 'network interface for multicast' }),
    ),
    enabled: Type.Optional(Type.Boolean({ description: 'false: this leg sends nothing (IS-05 rtp_enabled); absent: true' })),
  },
  strict,
);

export const RtpOutput = Type.Object(
  {
    type: Type.Literal('rtp'),
    host: Type.String({ format: 'engine-host', description: 'IPv4/IPv6 literal (unicast or multicast) or DNS name' }),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
    ttl: Type.Integer({ minimum: 1, maximum: 255, default: 16, description: 'multicast TTL' }),
    interface: Type.Optional(
      Type.String({ pattern: INTERFACE_NAME_PATTERN, description: 'network interface for multicast' }),
    ),
    // AES67 stream options (docs/aes67.md). The packet-size rule across channels, encoding and
    // ptime is checked after the schema (spec/rtp-output.ts).
    channels: Type.Integer({ minimum: 1, maximum: 8, default: 2, description: 'audio channels of the stream' }),
    encoding: Type.Unsafe<'L24' | 'L16'>({ type: 'string', enum: ['L24', 'L16'], default: 'L24' }),
    ptime: Type.Unsafe<0.125 | 0.25 | 0.333 | 1 | 4>({ type: 'number', enum: [0.125, 0.25, 0.333, 1, 4], default: 1, description: 'packet time, ms' }),
    payload_type: Type.Integer({ minimum: 96, maximum: 127, default: 96, description: 'RTP payload type (dynamic)' }),
    dscp: Type.Integer({ minimum: 0, maximum: 63, default: 34, description: 'DSCP of the RTP packets (34 = AF41)' }),
    // ST 2022-7: every packet also goes out, identical, on this leg (docs/aes67.md).
    redundant: Type.Optional(RedundantLeg),
    // false: the output sends nothing, the child and its input stay (a change restarts the
    // child; IS-05 master_enable and rtp_enabled, docs/nmos.md). Absent: true.
    enabled: Type.Optional(Type.Boolean({ description: 'false: no packet leaves; absent: true' })),
  },
  strict,
);

/** Under overload the engine keeps `high` pipelines real time first (docs/capacity.md). */
export const PRIORITIES = ['high', 'normal'] as const;
export type Priority = (typeof PRIORITIES)[number];
export const PriorityField = Type.Unsafe<Priority>({ type: 'string', enum: [...PRIORITIES], default: 'normal' });

/**
 * A file that plays, looped, when main and backup are both lost (docs/failover.md). The path is
 * checked and the file decoded when the spec is created or changed (pipelines/fallback-cache.ts):
 * absolute, normalised, inside the config's `[engine] fallback_dir`, decodable as audio.
 */
export const FallbackFile = Type.Object(
  {
    type: Type.Literal('file'),
    path: Type.String({ minLength: 2, maxLength: 1024, pattern: '^/[^\\p{C}]*$', description: 'absolute path of an audio file inside [engine] fallback_dir' }),
    loop: Type.Literal(true, { default: true, description: 'the file always plays looped' }),
  },
  strict,
);

/** When the clock bridge switches between main, backup and fallback (docs/failover.md). */
export const FailoverPolicy = Type.Object(
  {
    silence_dbfs: Type.Number({ minimum: -90, maximum: 0, default: -50, description: 'short-term level below which an input is silent, dBFS' }),
    silence_s: Type.Number({ minimum: 1, maximum: 600, default: 10, description: 'silence on main this long switches to a not silent backup, s' }),
    loss_ms: Type.Integer({ minimum: 50, maximum: 10000, default: 300, description: 'no audio from the input on air this long switches, ms' }),
    return_s: Type.Number({ minimum: 0, maximum: 600, default: 10, description: 'main healthy this long switches back to it, s' }),
    fallback_on_silence: Type.Boolean({ default: false, description: 'both inputs silent past silence_s: play the fallback' }),
  },
  strict,
);

export const PipelineSpec = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 128, pattern: '^[^\\p{C}]*$' }),
    input: SrtInput,
    backup: Type.Optional(SrtInput),
    fallback: Type.Optional(FallbackFile),
    failover: Type.Optional(FailoverPolicy),
    // The input forced on air (POST .../input, docs/failover.md); absent: auto, the policy decides.
    selection: Type.Optional(Type.Unsafe<'main' | 'backup' | 'fallback'>({ type: 'string', enum: ['main', 'backup', 'fallback'], description: 'the input forced on air; absent: auto' })),
    processing: Type.Array(ProcessingStep, { maxItems: 32, default: [] }),
    output: RtpOutput,
    priority: PriorityField,
    // The ceiling of the clock bridge's setpoint for this pipeline (docs/clock.md); absent: engine.jitter_max_ms.
    jitter_max_ms: Type.Optional(Type.Integer({ minimum: 10, maximum: 2500, description: 'ceiling of the jitter buffer setpoint (reserve + the depth the input asks for), ms; absent: engine.jitter_max_ms' })),
  },
  strict,
);

export type PipelineSpec = Static<typeof PipelineSpec>;
export type SrtInput = Static<typeof SrtInput>;
export type FailoverPolicy = Static<typeof FailoverPolicy>;
export type FallbackFile = Static<typeof FallbackFile>;
export type RtpOutput = Static<typeof RtpOutput>;
export type RedundantLeg = Static<typeof RedundantLeg>;
export type ProcessingStep = Static<typeof ProcessingStep>;
export type LoudnessNormalizeStep = Static<typeof LoudnessNormalizeStep>;
export type EqStep = Static<typeof EqStep>;
export type EqBand = Static<typeof EqBand>;
