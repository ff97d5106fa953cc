/**
 * A real @grpc/grpc-js client of svc.v1.EngineService for tests, with promise wrappers and the
 * engine's gRPC port read from its config file (the helper writes a free grpc_port there).
 */
import { readFileSync } from 'node:fs';
import { credentials, Metadata, type ClientReadableStream, type ServiceError, type status, type StatusObject } from '@grpc/grpc-js';
import { parse } from 'smol-toml';
import {
  EngineServiceClient,
  type CreatePipelineRequest,
  type HealthResponse,
  type MetricsEvent,
  type Pipeline,
  type PipelineList,
  type ResetLoudnessRequest,
  type ResetLoudnessResponse,
  type UpdatePipelineRequest,
  type UpdatePipelineResponse,
} from '../../src/gen/svc/v1/engine.js';

export function grpcPortOf(engine: { configFile: string }): number {
  const config = parse(readFileSync(engine.configFile, 'utf8')) as { server?: { grpc_port?: unknown } };
  const port = config.server?.grpc_port;
  if (typeof port !== 'number') throw new Error(`no server.grpc_port in ${engine.configFile}`);
  return port;
}

type Done<T> = (error: ServiceError | null, response?: T) => void;

function settle<T>(resolve: (value: T) => void, reject: (error: ServiceError) => void): Done<T> {
  return (error, response) => {
    if (error !== null) reject(error);
    else if (response === undefined) reject(Object.assign(new Error('no response'), { code: 2, details: 'no response', metadata: new Metadata() }));
    else resolve(response);
  };
}

export class TestClient {
  readonly raw: EngineServiceClient;
  constructor(
    port: number,
    private readonly key?: string,
  ) {
    this.raw = new EngineServiceClient(`127.0.0.1:${port}`, credentials.createInsecure());
  }

  metadata(key = this.key): Metadata {
    const metadata = new Metadata();
    if (key !== undefined) metadata.set('authorization', `Bearer ${key}`);
    return metadata;
  }

  health(key?: string): Promise<HealthResponse> {
    return new Promise((resolve, reject) => this.raw.getHealth({}, this.metadata(key), settle(resolve, reject)));
  }

  create(request: CreatePipelineRequest, key?: string): Promise<Pipeline> {
    return new Promise((resolve, reject) => this.raw.createPipeline(request, this.metadata(key), settle(resolve, reject)));
  }

  list(key?: string): Promise<PipelineList> {
    return new Promise((resolve, reject) => this.raw.listPipelines({}, this.metadata(key), settle(resolve, reject)));
  }

  update(request: UpdatePipelineRequest, key?: string): Promise<UpdatePipelineResponse> {
    return new Promise((resolve, reject) => this.raw.updatePipeline(request, this.metadata(key), settle(resolve, reject)));
  }

  resetLoudness(request: ResetLoudnessRequest, key?: string): Promise<ResetLoudnessResponse> {
    return new Promise((resolve, reject) => this.raw.resetLoudness(request, this.metadata(key), settle(resolve, reject)));
  }

  delete(id: string, key?: string): Promise<void> {
    return new Promise((resolve, reject) =>
      this.raw.deletePipeline({ id }, this.metadata(key), (error) => (error === null ? resolve() : reject(error))),
    );
  }

  stream(key?: string): ClientReadableStream<MetricsEvent> {
    return this.raw.streamMetrics({}, this.metadata(key));
  }

  close(): void {
    this.raw.close();
  }
}

/** Events of a stream and how it ended. */
export interface Recorded {
  events: { at: number; event: MetricsEvent }[];
  /** Resolves with the final status (OK, CANCELLED, ...). */
  ended: Promise<{ code: status; details: string }>;
}

export function record(call: ClientReadableStream<MetricsEvent>): Recorded {
  const events: Recorded['events'] = [];
  call.on('data', (event: MetricsEvent) => events.push({ at: Date.now(), event }));
  const ended = new Promise<{ code: status; details: string }>((resolve) => {
    call.on('status', (s: StatusObject) => resolve({ code: s.code, details: s.details }));
  });
  // Errors end in 'status' too; without a listener an 'error' event would throw.
  call.on('error', () => undefined);
  return { events, ended };
}

/** A create request of the interface's example, with output only to loopback. */
export function createRequest(port: number, outputPort = 5004): CreatePipelineRequest {
  return {
    name: 'Morning Show',
    input: { type: 'srt', port },
    processing: [
      { plugin: 'loudness-normalize', target: -23, bands: [] },
      { plugin: 'eq', bands: [{ freq: 100, gain: -2 }, { freq: 8000, gain: 1.5 }] },
    ],
    output: { type: 'rtp', host: '127.0.0.1', port: outputPort },
  };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
