/**
 * The gRPC edge: @grpc/grpc-js on server.bind:server.grpc_port (insecure credentials, like the
 * interface's example), EngineService plus server reflection, 64 KiB receive limit like REST's
 * body limit. close() ends the metrics streams, then shuts down gracefully within a bound.
 */
import { isIP } from 'node:net';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import { EngineServiceService } from '../gen/svc/v1/engine.js';
import { fileDescriptorProto } from '../gen/svc/v1/engine_descriptor.js';
import { EngineGrpcService, type EngineServiceDeps } from './engine-service.js';

/** Largest request accepted, bytes (as REST's body limit). */
export const MAX_RECEIVE_BYTES = 64 * 1024;
/** Largest response sent, bytes (a list of max_pipelines pipelines fits many times over). */
export const MAX_SEND_BYTES = 4 * 1024 * 1024;
/** How long close() waits for calls in flight before it cuts them. */
export const SHUTDOWN_BOUND_MS = 2000;

export interface GrpcServerOptions extends EngineServiceDeps {
  bind: string;
}

export interface GrpcEdge {
  readonly service: EngineGrpcService;
  /** Binds and serves; resolves with the bound port (0 in `port` picks a free one). */
  listen(port: number): Promise<number>;
  close(): Promise<void>;
}

export function hostPort(host: string, port: number): string {
  return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

export function buildGrpcServer(options: GrpcServerOptions): GrpcEdge {
  const service = new EngineGrpcService(options);
  const server = new Server({
    'grpc.max_receive_message_length': MAX_RECEIVE_BYTES,
    'grpc.max_send_message_length': MAX_SEND_BYTES,
    // Pings an idle connection so a control room that vanished ends its metrics stream.
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
  });
  server.addService(EngineServiceService, service.handlers());
  new ReflectionService({
    'svc.v1': { format: 'Protocol Buffer 3 DescriptorProto', type: {}, fileDescriptorProtos: [fileDescriptorProto] },
  }).addToServer(server);
  let bound = false;

  return {
    service,
    listen(port: number): Promise<number> {
      return new Promise((resolve, reject) => {
        server.bindAsync(hostPort(options.bind, port), ServerCredentials.createInsecure(), (error, actual) => {
          if (error !== null) {
            reject(error);
            return;
          }
          bound = true;
          resolve(actual);
        });
      });
    },
    async close(): Promise<void> {
      service.endStreams();
      if (!bound) {
        server.forceShutdown();
        return;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          options.log.warn({ event: 'grpc-force-shutdown' }, `gRPC calls still open after ${SHUTDOWN_BOUND_MS} ms: cut`);
          server.forceShutdown();
          resolve();
        }, SHUTDOWN_BOUND_MS);
        timer.unref();
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}
