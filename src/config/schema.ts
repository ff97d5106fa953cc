/**
 * The configuration file's one definition, with its defaults. `config.toml` in the repository
 * equals these defaults (a test keeps them equal).
 */
import { Type, type Static } from '@sinclair/typebox';
import { PriorityField, ProcessingStep, RtpOutput } from '../spec/schema.js';

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
    /**
     * The folder a pipeline's `fallback.path` must lie in (docs/failover.md); relative to the
     * config file's folder like state_dir.
     */
    fallback_dir: Type.String({ minLength: 1, default: '/var/lib/audio-engine/fallback' }),
    max_pipelines: Type.Integer({ minimum: 1, maximum: 1024, default: 64 }),
    metrics_interval_ms: Type.Integer({ minimum: 100, maximum: 60000, default: 1000 }),
    /**
     * RTP packets (1 ms each) a pipeline's sink sends per wake-up: 1 = one packet each
     * millisecond; N = N packets back to back every N ms, the last N - 1 ms early.
     */
    rtp_packets_per_send: Type.Integer({ minimum: 1, maximum: 16, default: 4 }),
    /** Host CPU kept free when admitting pipelines, percent of the host's capacity (docs/capacity.md). */
    cpu_reserve_percent: Type.Number({ minimum: 0, maximum: 90, default: 15 }),
    /**
     * The host's CPU capacity in cores when it is less than the online CPUs show (a container's
     * CPU quota, a capped VM); 0: the online CPUs.
     */
    cpu_cores: Type.Number({ minimum: 0, maximum: 1024, default: 0 }),
    /**
     * Niceness added to the children of `normal` pipelines and stations (`high` ones run at the
     * engine's own): under overload the high ones stay real time first. 0: priorities have no effect.
     */
    normal_priority_nice: Type.Integer({ minimum: 0, maximum: 19, default: 10 }),
    /**
     * Target fill of each pipeline's jitter buffer (the clock bridge's FIFO), ms: the margin
     * against input jitter, and part of the sender-to-RTP latency (docs/clock.md).
     */
    jitter_ms: Type.Integer({ minimum: 5, maximum: 500, default: 50 }),
    /**
     * Ceiling of each pipeline's jitter buffer setpoint (jitter_ms + the depth the input's pattern
     * and lateness ask for), ms: the bound of the bridge's part of the latency. At it the bridge
     * keeps no more: later input runs it dry (inserted silence), counted (docs/clock.md).
     * At least jitter_ms; a pipeline's own `jitter_max_ms` overrides it.
     */
    jitter_max_ms: Type.Integer({ minimum: 10, maximum: 2500, default: 300 }),
    /**
     * SCHED_FIFO priority of the engine's own threads, above its children's (their highest is
     * 10), so that the API, the page and the metrics answer on a host whose pipelines ask for
     * more CPU than it has; 0 (the default): the engine runs SCHED_OTHER. Off by default: at 15,
     * 8 pipelines beside two busy loops lost audio in 2 of 3 runs (docs/operations.md).
     */
    control_priority: Type.Integer({ minimum: 0, maximum: 99, default: 0 }),
  },
  { ...strict, default: {} },
);

/** AES67 discovery and clock reporting (docs/aes67.md). */
export const Aes67Config = Type.Object(
  {
    /** Announce every multicast output's SDP with SAP (RFC 2974) to 239.255.255.255:9875. */
    sap: Type.Boolean({ default: true }),
    /**
     * Interface whose IPv4 address is the SDP's origin and SAP's source, and whose MAC is the
     * localmac reference clock; "" = the first interface with an IPv4 address that is not loopback.
     */
    interface: Type.String({ pattern: '^([A-Za-z0-9_.-]{1,15})?$', default: '' }),
    /** Multicast TTL of the SAP packets. */
    sap_ttl: Type.Integer({ minimum: 1, maximum: 255, default: 16 }),
    /** Base interval of the announcements, ms (each one jittered to 2/3-4/3 of it, RFC 2974). */
    sap_interval_ms: Type.Integer({ minimum: 1000, maximum: 300_000, default: 30_000 }),
    /** ptp4l's management socket (its uds_address), asked with `pmc -u -b 0 -s`. */
    ptp_socket: Type.String({ pattern: '^/[A-Za-z0-9_./-]{1,106}$', default: '/var/run/ptp4l' }), // a socket path has at most 107 bytes
    /** ptp4l's domainNumber: pmc asks in this domain (ptp4l ignores other domains). */
    ptp_domain: Type.Integer({ minimum: 0, maximum: 127, default: 0 }),
    /** How often ptp4l is asked, ms. */
    ptp_poll_ms: Type.Integer({ minimum: 500, maximum: 60_000, default: 2000 }),
    /**
     * Reference clock the SDP names while PTP is not locked: false = `localmac=<MAC>` (RFC 7273:
     * the sender's own clock), true = `ptp=IEEE1588-2008:traceable` (the host clock is traceable
     * to PTP/TAI by other means, e.g. GPS).
     */
    ptp_traceable: Type.Boolean({ default: false }),
  },
  { ...strict, default: {} },
);

/** `tai`, `realtime`, or a PTP hardware clock device `/dev/ptpN`. */
export const CLOCK_SOURCE = /^(tai|realtime|\/dev\/ptp[0-9]{1,3})$/;

export const ClockConfig = Type.Object(
  {
    /**
     * The clock every child's output runs on (the pipeline clock the clock bridge provides):
     * CLOCK_TAI (disciplined by ptp4l + phc2sys on an AES67 host), CLOCK_REALTIME, or a PTP
     * hardware clock read directly. RTP timestamps are this clock's time (docs/clock.md).
     */
    source: Type.String({ pattern: CLOCK_SOURCE.source, default: 'tai' }),
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
    /** Under overload `high` stations stay real time first (engine.normal_priority_nice). */
    priority: PriorityField,
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

/** The NMOS node: IS-04 v1.3 Node API and registration (docs/nmos.md). */
export const NmosConfig = Type.Object(
  {
    /** Off by default: announcing on a plant's network is the operator's choice. */
    enabled: Type.Boolean({ default: false }),
    /** Node API /x-nmos/node/v1.3/ (and the senders' transport files under /x-nmos/connection/v1.1/). */
    http_port: Type.Integer({ minimum: 1, maximum: 65535, default: 3212 }),
    /** Registration API base URLs, highest priority first; empty: found by DNS-SD (unicast, then mDNS). */
    registries: Type.Array(Type.String({ pattern: '^http://[A-Za-z0-9.\\[\\]:-]{1,261}/?$' }), { maxItems: 8, default: [] }),
    /** The node's and device's label; "" = the host name. */
    label: Type.String({ maxLength: 64, pattern: '^[^\\p{C}]*$', default: '' }),
  },
  { ...strict, default: {} },
);

export const Config = Type.Object(
  {
    mode: Type.Unsafe<'self-hosted' | 'managed'>({ type: 'string', enum: ['self-hosted', 'managed'], default: 'self-hosted' }),
    server: ServerConfig,
    auth: AuthConfig,
    engine: EngineConfig,
    aes67: Aes67Config,
    clock: ClockConfig,
    stations: Type.Array(StationConfig, { default: [], maxItems: 256 }),
    dashboard: DashboardConfig,
    nmos: NmosConfig,
  },
  strict,
);

export type Config = Static<typeof Config>;
export type StationConfig = Static<typeof StationConfig>;
export type Aes67Config = Static<typeof Aes67Config>;
export type NmosConfig = Static<typeof NmosConfig>;
