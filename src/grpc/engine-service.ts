/**
 * svc.v1.EngineService: the gRPC handlers over the same registry, health and keys as REST.
 * Requests are mapped to the REST JSON shape and validated by the one spec validator; errors go
 * through the one table in errors.ts (EngineError.grpcCode). Anything else is INTERNAL with a
 * fixed message: the detail goes to the log, never to the client.
 */
import { Metadata, status, type sendUnaryData, type ServerErrorResponse, type ServerUnaryCall, type ServerWritableStream } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { PtpMonitor } from '../aes67/ptp-monitor.js';
import type { Aes67Sessions } from '../aes67/sessions.js';
import type { KeyRing } from '../auth/keys.js';
import { CapacityError, EngineError, ValidationError } from '../errors.js';
import type {
  CreatePipelineRequest,
  DeletePipelineRequest,
  Empty,
  EngineServiceServer,
  GetPipelineSdpRequest,
  HealthResponse,
  MetricsEvent,
  Pipeline,
  PipelineList,
  PipelineSdp,
  UpdatePipelineRequest,
  UpdatePipelineResponse,
  ResetLoudnessRequest,
  SelectInputRequest,
  ResetLoudnessResponse,
} from '../gen/svc/v1/engine.js';
import type { EngineHealth } from '../health.js';
import { DOTTED, parsePipelineSpec, specWarnings } from '../spec/validate.js';
import type { PipelineRegistry } from '../pipelines/registry.js';
import { authorize } from './auth.js';
import { createRequestToJson, updateRequestToPatch } from './from-proto.js';
import { MetricsHub } from './metrics-stream.js';
import { healthToProto, pipelineToProto } from './to-proto.js';

export interface EngineServiceDeps {
  pipelines: Pick<PipelineRegistry, 'create' | 'list' | 'get' | 'delete' | 'update' | 'select' | 'resetLoudness' | 'entries' | 'size'>;
  health: Pick<EngineHealth, 'report'>;
  /** Each pipeline's SDP (aes67/sessions.ts). */
  aes67: Pick<Aes67Sessions, 'sdp'>;
  ptp: Pick<PtpMonitor, 'status'>;
  keys: KeyRing | undefined;
  log: Logger;
  metricsIntervalMs: number;
}

const INTERNAL_MESSAGE = 'internal error; the engine log has the details';

/** The one translation of an error into a gRPC status. */
export function toServiceError(error: unknown, log: Logger, method: string): Partial<ServerErrorResponse> {
  if (error instanceof EngineError) {
    const code: status = error.grpcCode;
    const metadata = new Metadata();
    if (code === status.UNAUTHENTICATED) metadata.set('www-authenticate', 'Bearer');
    if (error instanceof CapacityError) metadata.set('retry-after', String(error.retryAfterS));
    return { code, details: error.message, metadata };
  }
  log.error({ err: error, method }, `gRPC ${method} failed`);
  return { code: status.INTERNAL, details: INTERNAL_MESSAGE };
}

export class EngineGrpcService {
  readonly metrics: MetricsHub;
  private readonly streams = new Map<ServerWritableStream<Empty, MetricsEvent>, () => void>();
  private closing = false;

  constructor(private readonly deps: EngineServiceDeps) {
    this.metrics = new MetricsHub({
      pipelines: deps.pipelines,
      intervalMs: deps.metricsIntervalMs,
      onError: (error) => deps.log.error({ err: error }, 'metrics sample failed'),
    });
  }

  /** Open StreamMetrics calls. */
  get openStreams(): number {
    return this.streams.size;
  }

  /** The handlers, keyed as the generated service definition wants them. */
  handlers(): EngineServiceServer {
    return {
      getHealth: this.unary('GetHealth', false, async (): Promise<HealthResponse> => healthToProto(await this.deps.health.report(), this.deps.ptp.status)),
      createPipeline: this.unary('CreatePipeline', true, async (request: CreatePipelineRequest): Promise<Pipeline> => {
        const spec = parsePipelineSpec(createRequestToJson(request), DOTTED);
        const view = await this.deps.pipelines.create(spec);
        return pipelineToProto(view, this.deps.aes67.sdp(view), specWarnings(spec, DOTTED));
      }),
      listPipelines: this.unary('ListPipelines', true, async (): Promise<PipelineList> => ({
        pipelines: this.deps.pipelines.list().map((view) => pipelineToProto(view, this.deps.aes67.sdp(view))),
      })),
      getPipelineSdp: this.unary('GetPipelineSdp', true, async (request: GetPipelineSdpRequest): Promise<PipelineSdp> => {
        if (request.id === '') throw new ValidationError('id is required', ['id']);
        const view = this.deps.pipelines.get(request.id);
        return { id: view.id, sdp: this.deps.aes67.sdp(view) };
      }),
      deletePipeline: this.unary('DeletePipeline', true, async (request: DeletePipelineRequest): Promise<Empty> => {
        if (request.id === '') throw new ValidationError('id is required', ['id']);
        await this.deps.pipelines.delete(request.id);
        return {};
      }),
      updatePipeline: this.unary('UpdatePipeline', true, async (request: UpdatePipelineRequest): Promise<UpdatePipelineResponse> => {
        if (request.id === '') throw new ValidationError('id is required', ['id']);
        const { pipeline, applied } = await this.deps.pipelines.update(request.id, updateRequestToPatch(request), DOTTED, request.if_version);
        return { pipeline: pipelineToProto(pipeline, this.deps.aes67.sdp(pipeline)), applied };
      }),
      resetLoudness: this.unary('ResetLoudness', true, async (request: ResetLoudnessRequest): Promise<ResetLoudnessResponse> => {
        if (request.id === '') throw new ValidationError('id is required', ['id']);
        const { steps } = await this.deps.pipelines.resetLoudness(request.id);
        return { id: request.id, steps, reset_at: new Date().toISOString() };
      }),
      selectInput: this.unary('SelectInput', true, async (request: SelectInputRequest): Promise<UpdatePipelineResponse> => {
        if (request.id === '') throw new ValidationError('id is required', ['id']);
        const { pipeline, applied } = await this.deps.pipelines.select(request.id, { select: request.select }, DOTTED);
        return { pipeline: pipelineToProto(pipeline, this.deps.aes67.sdp(pipeline)), applied };
      }),
      streamMetrics: (call) => this.streamMetrics(call),
    };
  }

  /** Ends every open stream with OK and stops sampling (engine shutdown). */
  endStreams(): void {
    this.closing = true;
    for (const [call, unsubscribe] of [...this.streams]) {
      unsubscribe();
      call.end();
    }
    this.metrics.close();
  }

  private unary<Req, Res>(
    method: string,
    guarded: boolean,
    run: (request: Req) => Promise<Res>,
  ): (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void {
    return (call, callback) => {
      const started = Date.now();
      void (async () => {
        if (guarded) authorize(this.deps.keys, call.metadata);
        return run(call.request);
      })().then(
        (response) => {
          if (method !== 'GetHealth') this.deps.log.info({ method, code: 'OK', ms: Date.now() - started }, 'grpc');
          callback(null, response);
        },
        (error: unknown) => {
          const serviceError = toServiceError(error, this.deps.log, method);
          this.deps.log.info({ method, code: status[serviceError.code ?? status.UNKNOWN], ms: Date.now() - started }, 'grpc');
          callback(serviceError);
        },
      );
    };
  }

  private streamMetrics(call: ServerWritableStream<Empty, MetricsEvent>): void {
    try {
      if (this.closing) throw new EngineError('ENGINE_UNAVAILABLE', 'the engine is shutting down');
      authorize(this.deps.keys, call.metadata);
    } catch (error) {
      call.emit('error', toServiceError(error, this.deps.log, 'StreamMetrics'));
      return;
    }
    const unsubscribe = this.metrics.subscribe((event) => {
      // A client that does not read gets no backlog: events are dropped until it catches up.
      if (call.writableNeedDrain) return;
      call.write(event);
    });
    const end = (): void => {
      unsubscribe();
      this.streams.delete(call);
    };
    this.streams.set(call, end);
    // Like grpc-health-check's Watch: the listener goes when the client cancels or the call ends.
    call.on('cancelled', end);
    call.on('error', end);
    call.on('close', end);
    call.on('finish', end);
  }
}
