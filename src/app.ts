/**
 * Composition root: builds every part from the configuration and wires them; start() and
 * close() are the engine's whole life. Only this file imports the edges.
 */
import path from 'node:path';
import { mkdir } from 'node:fs/promises';
import { isIP } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { senderInterfaceFinder } from './aes67/host-interface.js';
import { pmcLocalSocket, PtpMonitor } from './aes67/ptp-monitor.js';
import { openSapSender } from './aes67/sap-socket.js';
import { Aes67Sessions, type StreamSource } from './aes67/sessions.js';
import { KeyRing } from './auth/keys.js';
import { createHostCapacity } from './capacity/create.js';
import type { LoadedConfig } from './config/load.js';
import { loadCheck, saveCheck } from './gst/check-cache.js';
import { checkGstreamer, gstEnvironment } from './gst/environment.js';
import { readOwnProcess, realtimeRefused } from './gst/realtime.js';
import { buildGrpcServer, type GrpcEdge } from './grpc/server.js';
import { EngineHealth } from './health.js';
import { buildDashboardServer } from './http/dashboard-server.js';
import { buildRestServer } from './http/server.js';
import { withSdp } from './http/routes/pipelines.js';
import type { OutputPatch } from './nmos/connection.js';
import { NmosNode } from './nmos/node.js';
import { registerPtpMetrics } from './metrics/ptp-metrics.js';
import { createMetrics } from './metrics/registry.js';
import { probeUdpPort } from './net/udp-port.js';
import { LinkWatcher } from './net/link-watcher.js';
import { readSysfsLink } from './net/link-state.js';
import { launchChild, runCommand } from './process/child.js';
import { reapLeftovers } from './process/reap.js';
import { PipelineStore } from './store/pipeline-store.js';
import { DEFAULT_BACKOFF } from './supervisor/backoff.js';
import { findPortHolder, probeTcpPort } from './stations/port-holder.js';
import { harborPort } from './stations/station.js';
import { Stations } from './stations/stations.js';
import { StationValuesStore } from './store/station-values.js';
import { applyPipelinePatch } from './spec/patch.js';
import { DOTTED } from './spec/validate.js';
import { ValidationError } from './errors.js';
import { PipelineRegistry } from './pipelines/registry.js';
import { FallbackCache } from './pipelines/fallback-cache.js';
import { VERSION } from './version.js';
import { holdControlPriority } from './process/control-priority.js';

export interface EngineOptions {
  config: LoadedConfig;
  log: Logger;
  env?: NodeJS.ProcessEnv;
  /** Overrides of the configured ports (tests use 0 to get a free one). */
  ports?: { rest?: number; grpc?: number; dashboard?: number; nmos?: number };
  /**
   * Raise this process's threads to `engine.control_priority` once the servers listen: the
   * process edge (main.ts) does; an engine made inside another program (a test) leaves it alone.
   */
  ownProcess?: boolean;
}

export interface StartedEngine {
  restPort: number;
  grpcPort: number;
  dashboardPort: number;
  /** The NMOS Node API's port; undefined while [nmos] is off. */
  nmosPort: number | undefined;
}

export interface Engine {
  readonly pipelines: PipelineRegistry;
  readonly stations: Stations;
  readonly rest: FastifyInstance;
  readonly dashboard: FastifyInstance;
  readonly grpc: GrpcEdge;
  readonly nmos: NmosNode | undefined;
  start(): Promise<StartedEngine>;
  close(): Promise<void>;
}

/** Each child: SIGINT (EOS), then SIGTERM after eosMs, then SIGKILL after termMs more (all children in parallel). */
export const STOP_BOUNDS = { eosMs: 3000, termMs: 2000 } as const;
/** A child not PLAYING this long after its start (a station's stdin child: twice this long after a source got its input) is killed and restarted. */
export const READY_TIMEOUT_MS = 10_000;
/** How long gst-launch may take to exit after "pipeline doesn't want to preroll" before it is killed. */
export const PREROLL_EXIT_MS = 2000;
/** How often the link watcher reads the interfaces of the output legs (carrier), ms. */
export const LINK_PERIOD_MS = 1000;

/**
 * Type=notify readiness: under systemd (NOTIFY_SOCKET set) `systemd-notify --ready`, run like any
 * other child of the engine (process/child.ts). The unit has NotifyAccess=all because the
 * message comes from that helper, not from the main process; systemd-notify waits until systemd
 * has read it, so the message is not lost when the helper exits. Never fatal.
 */
async function notifySystemd(env: NodeJS.ProcessEnv, log: Logger, status: string): Promise<void> {
  if (env.NOTIFY_SOCKET === undefined || env.NOTIFY_SOCKET === '') return;
  try {
    const result = await runCommand('systemd-notify', ['--ready', `--pid=${process.pid}`, `--status=${status}`], {}, 5000);
    if (result.exitCode !== 0) log.warn({ event: 'notify-failed', exit_code: result.exitCode ?? null }, `systemd-notify --ready failed: ${result.stderr.trim()}`);
  } catch (error) {
    log.warn({ event: 'notify-failed' }, `systemd-notify --ready failed: ${(error as Error).message}`);
  }
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

/** The child states in which a pipeline's stream is announced (not stopping, stopped or failed). */
const ANNOUNCED_STATES: ReadonlySet<string> = new Set(['starting', 'running', 'exited', 'backoff']);

/** Every pipeline's and station's RTP output, live while its child is wanted (SAP announces these, NMOS registers them). */
function outputStreams(pipelines: PipelineRegistry, stations: Stations): () => Iterable<StreamSource> {
  return function* () {
    for (const { record, managed } of pipelines.entries()) {
      // An output switched off (output.enabled false) is not announced: SAP sends its deletion.
      const live = ANNOUNCED_STATES.has(managed.snapshot().state) && record.spec.output.enabled !== false;
      yield { id: record.id, name: record.spec.name, output: record.spec.output, live };
    }
    for (const station of stations.list()) {
      yield { id: `station:${station.id}`, name: station.name, output: station.output, live: station.enabled && ANNOUNCED_STATES.has(station.state) };
    }
  };
}

/**
 * IS-05 activations reach a pipeline's output through the engine's PATCH path (validated as a
 * REST PATCH of `output`, stored, live or a restart); a station's output comes from config.toml.
 */
function outputChanges(pipelines: PipelineRegistry): {
  checkOutput: (stream: StreamSource, patch: OutputPatch) => string | undefined;
  changeOutput: (stream: StreamSource, patch: OutputPatch, onStored: () => void) => Promise<void>;
} {
  const stationRefusal = (stream: StreamSource): string | undefined =>
    (stream.id.startsWith('station:') ? `the output of ${stream.id} is set in config.toml; IS-05 does not change it` : undefined);
  return {
    checkOutput(stream, patch) {
      const refused = stationRefusal(stream);
      if (refused !== undefined) return refused;
      const entry = [...pipelines.entries()].find((e) => e.record.id === stream.id);
      if (entry === undefined) return `pipeline ${stream.id} is gone`;
      try {
        applyPipelinePatch(entry.record.spec, { output: patch }, DOTTED);
        return undefined;
      } catch (error) {
        if (error instanceof ValidationError) return error.message;
        throw error;
      }
    },
    async changeOutput(stream, patch, onStored) {
      const refused = stationRefusal(stream);
      if (refused !== undefined) throw new Error(refused);
      await pipelines.update(stream.id, { output: patch }, DOTTED, undefined, onStored);
    },
  };
}

/** PTP status and the AES67 sessions (SDP, SAP) of every pipeline and station output. */
function createAes67(config: LoadedConfig, log: Logger, streams: () => Iterable<StreamSource>): { ptp: PtpMonitor; aes67: Aes67Sessions } {
  const ptp = new PtpMonitor({
    socket: config.aes67.ptp_socket,
    localSocket: pmcLocalSocket(config.stateDir, tmpdir(), process.pid),
    domain: config.aes67.ptp_domain,
    pollMs: config.aes67.ptp_poll_ms,
    log,
  });
  const aes67 = new Aes67Sessions({
    config: config.aes67,
    streams,
    ptp: () => ptp.status,
    findInterface: senderInterfaceFinder(1000),
    openSender: openSapSender,
    log: log.child({ component: 'aes67' }),
    now: Date.now,
    random: Math.random,
    tickMs: 500,
  });
  ptp.onChange(() => void aes67.refresh().catch(() => undefined));
  return { ptp, aes67 };
}

export async function createEngine(options: EngineOptions): Promise<Engine> {
  const { config, log } = options;
  const env = options.env ?? process.env;
  const startedAt = Date.now();
  const gst = gstEnvironment(config.stateDir, env);
  const keys = config.auth.enabled ? new KeyRing(config.auth.api_keys) : undefined;

  const reservedPorts = new Map<number, string>(
    config.stations.map((s) => [harborPort(s.number), `station ${s.id} (harbor port)`]),
  );
  const capacity = createHostCapacity(config.engine, log);
  // One watcher for every output leg's interface link (carrier), read once a second (docs/aes67.md, "A failed leg").
  const links = new LinkWatcher((ifname) => readSysfsLink(ifname), { periodMs: LINK_PERIOD_MS });
  const supervisorDeps = {
    launch: launchChild,
    command: gst.launchCommand,
    env: gst.env,
    log,
    backoff: DEFAULT_BACKOFF,
    random: Math.random,
    now: Date.now,
    stopBounds: STOP_BOUNDS,
    logLines: 2000,
    statsIntervalMs: config.engine.metrics_interval_ms,
    stallAfterMs: Math.max(5000, 5 * config.engine.metrics_interval_ms),
    hostOverloaded: () => capacity.overloaded(),
    readyTimeoutMs: READY_TIMEOUT_MS,
    prerollExitMs: PREROLL_EXIT_MS,
    links,
  };
  const compile = {
    statsIntervalMs: config.engine.metrics_interval_ms,
    meterIntervalMs: config.dashboard.meter_interval_ms,
    packetsPerSend: config.engine.rtp_packets_per_send,
    clockSource: config.clock.source,
    jitterMs: config.engine.jitter_ms,
    jitterMaxMs: config.engine.jitter_max_ms,
  };
  const pipelines = new PipelineRegistry({
    store: new PipelineStore(config.stateDir),
    maxPipelines: config.engine.max_pipelines,
    compile,
    probePort: (port) => probeUdpPort(port),
    reservedPorts,
    capacity,
    log,
    now: () => new Date(),
    supervisorDeps,
    fallback: new FallbackCache({ fallbackDir: config.fallbackDir, cacheDir: path.join(config.stateDir, 'fallback'), env: gst.env }),
  });
  const stations = new Stations(config.stations, {
    supervisorDeps,
    compile,
    probe: (port, transport) => (transport === 'udp' ? probeUdpPort(port) : probeTcpPort(port)),
    findHolder: (port, transport) => findPortHolder(port, transport),
    log,
    now: Date.now,
    harborHost: '0.0.0.0',
    sourceWaitMs: 5000,
    capacity,
    values: new StationValuesStore(config.stateDir),
  });
  // Each running child's output thread: real time or not (null: its element does not say).
  const outputRealtime = (): (boolean | null | undefined)[] =>
    [...pipelines.entries(), ...stations.entries()].map(({ managed }) => managed.stats.clock?.outputRealtime);
  const health = new EngineHealth(VERSION, startedAt, () => checkGstreamer(gst), Date.now, () => pipelines.damaged(), () => capacity.overload(),
    () => realtimeRefused(outputRealtime(), readOwnProcess));
  const supervised = { entries: () => [...pipelines.entries(), ...stations.entries()] };
  const metrics = createMetrics(supervised, VERSION, capacity, () => pipelines.damaged().length, supervised);
  const streams = outputStreams(pipelines, stations);
  const { ptp, aes67 } = createAes67(config, log, streams);
  // NMOS: every pipeline, and the stations while they run.
  const nmos = config.nmos.enabled
    ? new NmosNode({
      config: config.nmos,
      seed: `${hostname()}:${config.stateDir}`,
      streams: () => [...streams()].filter((s) => !s.id.startsWith('station:') || s.live),
      ptp: () => ptp.status,
      traceable: config.aes67.ptp_traceable,
      findInterface: senderInterfaceFinder(1000),
      defaultInterface: config.aes67.interface,
      sdp: (stream) => aes67.sdp(stream),
      ...outputChanges(pipelines),
      log,
    })
    : undefined;
  registerPtpMetrics(metrics, ptp);
  const rest = await buildRestServer({ log, keys, health, pipelines, metrics, aes67, ptp });
  const dashboard = await buildDashboardServer({ log, keys, health, stations, pipelines, page: config.dashboard, describe: withSdp(aes67) });
  const grpc = buildGrpcServer({
    bind: config.server.bind,
    log: log.child({ component: 'grpc' }),
    keys,
    health,
    pipelines,
    aes67,
    ptp,
    metricsIntervalMs: config.engine.metrics_interval_ms,
  });

  let releasePriority = (): void => undefined;
  return {
    pipelines,
    stations,
    rest,
    dashboard,
    grpc,
    nmos,
    async start(): Promise<StartedEngine> {
      if (!keys && !isLoopback(config.server.bind)) {
        log.warn({ event: 'insecure-bind', bind: config.server.bind }, `listening on ${config.server.bind} with authentication off: anyone who reaches this host can control the engine`);
      }
      capacity.start();
      await mkdir(config.stateDir, { recursive: true });
      const reaped = await reapLeftovers(config.stateDir);
      if (reaped.length > 0) log.warn({ event: 'reaped', pids: reaped }, `ended ${reaped.length} child process(es) left by an earlier run`);
      // The element check also warms the GStreamer registry (cold: about 1 s). It runs while the
      // servers come up; children start once it is done, so each child starts warm.
      const check = health.prime(await loadCheck(config.stateDir, gst)).then(async (result) => {
        if (!result.ok) log.error({ event: 'gstreamer-missing', missing: result.missing }, result.reason ?? 'GStreamer check failed');
        await saveCheck(config.stateDir, gst, result).catch(() => undefined);
      });
      // Stored pipelines are in the registry (held, state `pending`) and the store's folder exists
      // before any edge answers: the first list is complete and a create cannot meet a missing
      // folder or a second start of the same record.
      const loaded = await pipelines.load();
      await rest.listen({ host: config.server.bind, port: options.ports?.rest ?? config.server.rest_port });
      const address = rest.server.address();
      const restPort = typeof address === 'object' && address !== null ? address.port : config.server.rest_port;
      const grpcPort = await grpc.listen(options.ports?.grpc ?? config.server.grpc_port);
      await dashboard.listen({ host: config.server.bind, port: options.ports?.dashboard ?? config.server.dashboard_port });
      const dashAddress = dashboard.server.address();
      const dashboardPort = typeof dashAddress === 'object' && dashAddress !== null ? dashAddress.port : config.server.dashboard_port;
      const nmosPort = await nmos?.start(config.server.bind, options.ports?.nmos ?? config.nmos.http_port);
      log.info(
        // startup_ms: from createEngine; process_ms: from the process's own start (Node boot and module loading included).
        { event: 'ready', rest_port: restPort, grpc_port: grpcPort, dashboard_port: dashboardPort, startup_ms: Date.now() - startedAt, process_ms: Math.round(performance.now()), version: VERSION },
        `audio-engine ${VERSION} ready in ${Date.now() - startedAt} ms: REST on ${config.server.bind}:${restPort}, gRPC on port ${grpcPort}, dashboard on port ${dashboardPort}`,
      );
      if (options.ownProcess === true) releasePriority = await holdControlPriority(config.engine.control_priority, log);
      await Promise.all([check, capacity.measured()]);
      await ptp.start();
      aes67.start();
      // Held pipelines (stored ones and those created since the servers listen) start now, in
      // creation order while the host has room.
      const held = pipelines.startChildren();
      const started = await stations.autostart();
      if (stations.size > 0) log.info({ event: 'stations-started', started, configured: stations.size }, `${started} of ${stations.size} station(s) started`);
      log.info({ event: 'restored', restored: loaded.loaded, damaged: loaded.damaged, started: held }, `${loaded.loaded} stored pipeline(s) started (${held} child(ren) in all)`);
      await notifySystemd(env, log, `ready: ${loaded.loaded} pipeline(s), ${started} station(s); REST :${restPort}, gRPC :${grpcPort}, dashboard :${dashboardPort}`);
      return { restPort, grpcPort, dashboardPort, nmosPort };
    },
    async close(): Promise<void> {
      await grpc.close(); // streams end first, then calls in flight (bounded), before any child stops
      await Promise.all([rest.close(), dashboard.close(), nmos?.close()]); // the node is DELETEd from its registry
      await aes67.close(); // SAP deletions go out while the streams still play
      await Promise.all([pipelines.shutdown(), stations.shutdown(), ptp.close()]);
      capacity.stop();
      links.close();
      releasePriority();
    },
  };
}
