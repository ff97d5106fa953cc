/**
 * Errors with stable codes. Domain code throws these; only the edges (http/, grpc/) translate
 * them, once, through the table below.
 */

/** gRPC status codes (numbers fixed by the gRPC spec), named here so this module stays pure. */
export const GrpcCode = {
  INVALID_ARGUMENT: 3,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;
export type GrpcCode = (typeof GrpcCode)[keyof typeof GrpcCode];

export const errorTable = {
  VALIDATION_FAILED: { http: 400, grpc: GrpcCode.INVALID_ARGUMENT },
  UNAUTHORIZED: { http: 401, grpc: GrpcCode.UNAUTHENTICATED },
  PIPELINE_NOT_FOUND: { http: 404, grpc: GrpcCode.NOT_FOUND },
  PORT_IN_USE: { http: 409, grpc: GrpcCode.ALREADY_EXISTS },
  PIPELINE_LIMIT_REACHED: { http: 429, grpc: GrpcCode.RESOURCE_EXHAUSTED },
  ENGINE_UNAVAILABLE: { http: 503, grpc: GrpcCode.UNAVAILABLE },
  VERSION_MISMATCH: { http: 412, grpc: GrpcCode.FAILED_PRECONDITION },
  CHANGE_REFUSED: { http: 500, grpc: GrpcCode.INTERNAL },
} as const satisfies Record<string, { http: number; grpc: GrpcCode }>;

export type ErrorCode = keyof typeof errorTable;

export class EngineError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
  get httpStatus(): number {
    return errorTable[this.code].http;
  }
  get grpcCode(): GrpcCode {
    return errorTable[this.code].grpc;
  }
}

/** A request that does not fit the schema. `path` is the field path as a list of keys. */
export class ValidationError extends EngineError {
  readonly path: readonly (string | number)[];
  constructor(message: string, path: readonly (string | number)[] = []) {
    super('VALIDATION_FAILED', message);
    this.path = path;
  }
}

export class NotFoundError extends EngineError {
  constructor(message: string) {
    super('PIPELINE_NOT_FOUND', message);
  }
}

export class PortInUseError extends EngineError {
  readonly port: number;
  constructor(port: number, message: string) {
    super('PORT_IN_USE', message);
    this.port = port;
  }
}

export class LimitError extends EngineError {
  constructor(message: string) {
    super('PIPELINE_LIMIT_REACHED', message);
  }
}

export class UnauthorizedError extends EngineError {
  constructor(message = 'a valid bearer key is required') {
    super('UNAUTHORIZED', message);
  }
}

export class UnavailableError extends EngineError {
  constructor(message: string) {
    super('ENGINE_UNAVAILABLE', message);
  }
}

/** A change made against another version of the pipeline than the current one (If-Match). */
export class VersionMismatchError extends EngineError {
  constructor(message: string) {
    super('VERSION_MISMATCH', message);
  }
}

/** A running child refused a validated change (a bug between engine and element: nothing changed). */
export class ChangeRefusedError extends EngineError {
  constructor(message: string) {
    super('CHANGE_REFUSED', message);
  }
}

/** Configuration that cannot be used: start-up stops with exit code 2. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
