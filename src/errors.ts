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
  /** The host's CPU cannot carry one more pipeline (capacity/, docs/capacity.md). */
  HOST_AT_CAPACITY: { http: 503, grpc: GrpcCode.RESOURCE_EXHAUSTED },
  /** The same for a station start on the dashboard: a conflict with the host's state, like a held port. */
  STATION_AT_CAPACITY: { http: 409, grpc: GrpcCode.RESOURCE_EXHAUSTED },
  ENGINE_UNAVAILABLE: { http: 503, grpc: GrpcCode.UNAVAILABLE },
  /** The state directory's file system is full (ENOSPC, EDQUOT): a record cannot be written. */
  INSUFFICIENT_STORAGE: { http: 507, grpc: GrpcCode.RESOURCE_EXHAUSTED },
  /** Any other failure to write a record durably (read-only file system, permissions, I/O error). */
  STORAGE_FAILED: { http: 500, grpc: GrpcCode.INTERNAL },
  VERSION_MISMATCH: { http: 412, grpc: GrpcCode.FAILED_PRECONDITION },
  CHANGE_REFUSED: { http: 500, grpc: GrpcCode.INTERNAL },
  /** A loudness measurement reset for a pipeline that has no loudness step, or no running child. */
  NOT_MEASURING: { http: 409, grpc: GrpcCode.FAILED_PRECONDITION },
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

/**
 * A pipeline or station refused because the host cannot carry it: the message names the measured
 * headroom and the estimated cost; `retryAfterS` becomes REST's Retry-After.
 */
export class CapacityError extends EngineError {
  readonly retryAfterS: number;
  constructor(message: string, retryAfterS: number, code: 'HOST_AT_CAPACITY' | 'STATION_AT_CAPACITY' = 'HOST_AT_CAPACITY') {
    super(code, message);
    this.retryAfterS = retryAfterS;
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

/**
 * A pipeline record could not be written durably; nothing of the pipeline was kept. `errno` is the
 * system's code (ENOSPC, EDQUOT, EROFS, EACCES, EIO, ...) for the log.
 */
export class StorageError extends EngineError {
  readonly errno: string;
  constructor(errno: string, message: string) {
    super(errno === 'ENOSPC' || errno === 'EDQUOT' ? 'INSUFFICIENT_STORAGE' : 'STORAGE_FAILED', message);
    this.errno = errno;
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

/** A request about the loudness measurement of a pipeline that measures nothing now (no loudness step, no child). */
export class NotMeasuringError extends EngineError {
  constructor(message: string) {
    super('NOT_MEASURING', message);
  }
}

/** Configuration that cannot be used: start-up stops with exit code 2. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}
