/**
 * The configuration file's one definition, with its defaults. `config.toml` in the repository
 * equals these defaults (a test keeps them equal).
 */
import { Type, type Static } from '@sinclair/typebox';
import { ProcessingStep, RtpOutput } from '../spec/schema.js';

const strict = { additionalProperties: false } as const;
const Port = (dflt: number) => Type.Integer({ minimum: 1, maximum: 65535, default: dflt });

export const ServerConfig = Type.Object(
  {
    bind: Type.String({ format: 'engine-host', default: '127.0.0.1' }),
    rest_port: Port(8080),
    grpc_port: Port(50051),
    dashboard_port: Port(8000),
  },
  { ...strict, default: {} },
);

export const AuthConfig = Type.Object(
  {
    enabled: Type.Boolean({ default: false }),
    api_keys: Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { default: [], maxItems: 1000 }),
  },
  { ...strict, default: {} },
);

export const EngineConfig = Type.Object(
  {
    state_dir: Type.String({ minLength: 1, default: 'var' }),
    max_pipelines: Type.Integer({ minimum: 1, maximum: 1024, default: 64 }),
    metrics_interval_ms: Type.Integer({ minimum: 100, maximum: 60000, default: 1000 }),
    /**
     * RTP packets (1 ms each) a pipeline's sink sends per wake-up: 1 = one packet each
     * millisecond; N = N packets back to back every N ms, the last N - 1 ms early.
     */
    rtp_packets_per_send: Type.Integer({ minimum: 1, maximum: 16, default: 4 }),
  },
  { ...strict, default: {} },
);

export const StationConfig = Type.Object(
  {
    id: Type.String({ pattern: '^[a-z0-9-]{1,32}$' }),
    number: Type.Integer({ minimum: 1, maximum: 1000 }),
    name: Type.String({ minLength: 1, maxLength: 128, pattern: '^[^\\p{C}]*$' }),
    processing: Type.Array(ProcessingStep, { maxItems: 32, default: [] }),
    output: RtpOutput,
    /** What the harbor port (8100 + number - 1) accepts: an SRT caller (UDP) or an Icecast source client (TCP). */
    harbor: Type.Unsafe<'srt' | 'icecast'>({ type: 'string', enum: ['srt', 'icecast'], default: 'srt' }),
    /** SRT latency of the harbor, ms (harbor = "srt"). */
    latency: Type.Integer({ minimum: 20, maximum: 8000, default: 120 }),
    /** Source password of the Icecast harbor (user "source"); required for harbor = "icecast". Never logged or returned. */
    password: Type.Optional(Type.String({ minLength: 1, maxLength: 256, pattern: '^[\\x20-\\x7e]+$' })),
    /** Start the station with the engine. */
    autostart: Type.Boolean({ default: true }),
  },
  strict,
);

/** The operator's web page on the dashboard port (docs/dashboard.md). */
export const DashboardConfig = Type.Object(
  {
    /** Period of the children's meters (level and loudnorm messages), ms: 100 gives 10 Hz meters. */
    meter_interval_ms: Type.Integer({ minimum: 100, maximum: 60000, default: 100 }),
    /** Input silence longer than this turns the pipeline's tile amber, s. */
    silence_alert_s: Type.Integer({ minimum: 1, maximum: 3600, default: 10 }),
  },
  { ...strict, default: {} },
);

export const Config = Type.Object(
  {
    mode: Type.Unsafe<'self-hosted' | 'managed'>({ type: 'string', enum: ['self-hosted', 'managed'], default: 'self-hosted' }),
    server: ServerConfig,
    auth: AuthConfig,
    engine: EngineConfig,
    stations: Type.Array(StationConfig, { default: [], maxItems: 256 }),
    dashboard: DashboardConfig,
  },
  strict,
);

export type Config = Static<typeof Config>;
export type StationConfig = Static<typeof StationConfig>;
