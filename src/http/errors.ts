/**
 * The one translation of errors into REST responses, in fastify's shape:
 * {"statusCode":400,"code":"...","error":"Bad Request","message":"..."}. A 5xx never carries a
 * stack trace or an internal path: the detail goes to the log.
 */
import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyInstance } from 'fastify';
import { CapacityError, EngineError } from '../errors.js';

export interface ErrorBody {
  statusCode: number;
  code: string;
  error: string;
  message: string;
}

export function errorBody(statusCode: number, code: string, message: string): ErrorBody {
  return { statusCode, code, error: STATUS_CODES[statusCode] ?? 'Error', message };
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError | EngineError | Error, request, reply) => {
    if (error instanceof EngineError) {
      if (error.httpStatus === 401) void reply.header('WWW-Authenticate', 'Bearer');
      if (error instanceof CapacityError) void reply.header('Retry-After', String(error.retryAfterS));
      return reply.code(error.httpStatus).send(errorBody(error.httpStatus, error.code, error.message));
    }
    const status = 'statusCode' in error && typeof error.statusCode === 'number' ? error.statusCode : 500;
    if (status >= 400 && status < 500) {
      const code = 'code' in error && typeof error.code === 'string' ? error.code : 'BAD_REQUEST';
      return reply.code(status).send(errorBody(status, code, error.message));
    }
    request.log.error({ err: error }, 'request failed');
    return reply.code(500).send(errorBody(500, 'INTERNAL_ERROR', 'internal error; the engine log has the details'));
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send(errorBody(404, 'NOT_FOUND', `no route ${request.method} ${request.url.split('?')[0] ?? ''}`)),
  );
}
