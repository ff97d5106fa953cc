/**
 * Composition root: builds every part from the configuration and wires them; start() and
 * close() are the engine's whole life. Only this file imports the edges.
 */
import { mkdir } from 'node:fs/promises';
import { isIP } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { KeyRing } from './auth/keys.js';
import type { LoadedConfig } from './config/load.js';
import { checkGstreamer, gstEnvironment } from './gst/environment.js';
import { buildGrpcServer, type GrpcEdge } from './grpc/server.js';
import { EngineHealth } from './health.js';
import { buildRestServer } from './http/server.js';
import { createMetrics } from './metrics/registry.js';
import { probeUdpPort } from './net/udp-port.js';
import { PipelineStore } from './store/pipeline-store.js';
import { DEFAULT_BACKOFF } from './supervisor/backoff.js';
import { launchChild } from './supervisor/child.js';
import { reapLeftovers } from './supervisor/reap.js';
import { PipelineRegistry } from './supervisor/registry.js';
import { VERSION } from './version.js';

export interface EngineOptions {
  config: LoadedConfig;
  log: Logger;
  env?: NodeJS.ProcessEnv;
  /** Overrides of the configured ports (tests use 0 to get a free one). */
  ports?: { rest?: number; grpc?: number };
}

export interface StartedEngine {
  restPort: number;
  grpcPort: number;
}

export interface Engine {
  readonly pipelines: PipelineRegistry;
  readonly rest: FastifyInstance;
  readonly grpc: GrpcEdge;
  start(): Promise<StartedEngine>;
  close(): Promise<void>;
}

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || (isIP(host) === 4 && host.startsWith('127.'));
}

export async function createEngine(options: EngineOptions): Promise<Engine> {
  const { config, log } = options;
  const env = options.env ?? process.env;
  const startedAt = Date.now();
  const gst = gstEnvironment(config.stateDir, env);
  const keys = config.auth.enabled ? new KeyRing(config.auth.api_keys) : undefined;

  const reservedPorts = new Map<number, string>(
    config.stations.map((s) => [8100 + s.number - 1, `station ${s.id} (harbor port)`]),
  );
  const pipelines = new PipelineRegistry({
    store: new PipelineStore(config.stateDir),
    maxPipelines: config.engine.max_pipelines,
    statsIntervalMs: config.engine.metrics_interval_ms,
    probePort: (port) => probeUdpPort(port),
    reservedPorts,
    log,
    now: () => new Date(),
    supervisorDeps: {
      launch: launchChild,
      command: gst.launchCommand,
      env: gst.env,
      log,
      backoff: DEFAULT_BACKOFF,
      random: Math.random,
      now: Date.now,
      stopBounds: { eosMs: 3000, termMs: 2000 },
      logLines: 2000,
      statsIntervalMs: config.engine.metrics_interval_ms,
      stallAfterMs: Math.max(5000, 5 * config.engine.metrics_interval_ms),
    },
  });
  const health = new EngineHealth(VERSION, startedAt, () => checkGstreamer(gst));
  const metrics = createMetrics(pipelines, VERSION);
  const rest = await buildRestServer({ log, keys, health, pipelines, metrics });
  const grpc = buildGrpcServer({
    bind: config.server.bind,
    log: log.child({ component: 'grpc' }),
    keys,
    health,
    pipelines,
    metricsIntervalMs: config.engine.metrics_interval_ms,
  });

  return {
    pipelines,
    rest,
    grpc,
    async start(): Promise<StartedEngine> {
      if (!keys && !isLoopback(config.server.bind)) {
        log.warn({ event: 'insecure-bind', bind: config.server.bind }, `listening on ${config.server.bind} with authentication off: anyone who reaches this host can control the engine`);
      }
      await mkdir(config.stateDir, { recursive: true });
      const reaped = await reapLeftovers(config.stateDir);
      if (reaped.length > 0) log.warn({ event: 'reaped', pids: reaped }, `ended ${reaped.length} child process(es) left by an earlier run`);
      // The element check also warms the GStreamer registry (cold: about 1 s). It runs while the
      // servers come up; stored pipelines start once it is done, so each child starts warm.
      const check = health.prime().then((result) => {
        if (!result.ok) log.error({ event: 'gstreamer-missing', missing: result.missing }, result.reason ?? 'GStreamer check failed');
      });
      await rest.listen({ host: config.server.bind, port: options.ports?.rest ?? config.server.rest_port });
      const address = rest.server.address();
      const restPort = typeof address === 'object' && address !== null ? address.port : config.server.rest_port;
      const grpcPort = await grpc.listen(options.ports?.grpc ?? config.server.grpc_port);
      log.info(
        { event: 'ready', rest_port: restPort, grpc_port: grpcPort, startup_ms: Date.now() - startedAt, version: VERSION },
        `audio-engine ${VERSION} ready in ${Date.now() - startedAt} ms: REST on ${config.server.bind}:${restPort}, gRPC on port ${grpcPort}`,
      );
      await check;
      const restored = await pipelines.restore();
      log.info({ event: 'restored', restored: restored.restored, damaged: restored.damaged }, `${restored.restored} stored pipeline(s) started`);
      return { restPort, grpcPort };
    },
    async close(): Promise<void> {
      await grpc.close(); // streams end first, then calls in flight (bounded), before any child stops
      await rest.close();
      await pipelines.shutdown();
    },
  };
}
