/**
 * Answers sent before the request body was read (413 over the body limit, 415, 401, an unknown
 * route) must reach clients that are still sending that body. fastify answers a too-large body
 * with `Connection: close` without reading it, and Node then closes the socket with unread data
 * in it: the kernel resets the connection, and a client still uploading (Node's fetch, undici)
 * fails with EPIPE or ECONNRESET before it reads the answer. Here the engine keeps the connection
 * open after such an answer and reads and discards the rest of the body, within bounds, so every
 * client reads the answer; a body larger than the bound, or slower than the time bound, gets the
 * old behaviour (the connection is closed, and the client may see a reset instead of the answer).
 */
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';

export interface DrainLimits {
  /** Bytes of an unread body the engine reads and discards after answering. */
  bytes: number;
  /** How long after the answer the client has to finish sending, ms. */
  ms: number;
}

/** 16 MiB and 10 s: a refused upload of a few MiB from a normal client is read to its end. */
export const DRAIN_LIMITS: DrainLimits = { bytes: 16 * 1024 * 1024, ms: 10_000 };

export function installBodyDrain(app: FastifyInstance, limits: DrainLimits = DRAIN_LIMITS): void {
  const draining = new WeakSet<FastifyRequest>();
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.raw.complete) return payload;
    const declared = Number(request.headers['content-length']); // NaN for a chunked body
    if (declared > limits.bytes) {
      // Too much to read for nothing: close after the answer (the client may see a reset).
      void reply.header('connection', 'close');
      return payload;
    }
    // fastify's `Connection: close` after a body parser error would make Node close the socket
    // as soon as the answer is written; kept alive, Node reads the rest of the body (and drops it).
    reply.removeHeader('connection');
    draining.add(request);
    return payload;
  });
  app.addHook('onResponse', async (request) => {
    if (draining.has(request) && !request.raw.complete) bound(request.raw, limits);
  });
}

/** Closes the connection if the rest of the body is more than `limits.bytes` or takes longer than `limits.ms`. */
function bound(raw: IncomingMessage, limits: DrainLimits): void {
  let bytes = 0;
  const cut = (): void => {
    raw.socket.destroy();
  };
  const timer = setTimeout(cut, limits.ms);
  timer.unref();
  const onData = (chunk: Buffer): void => {
    bytes += chunk.length;
    if (bytes > limits.bytes) cut();
  };
  const done = (): void => {
    clearTimeout(timer);
    raw.off('data', onData);
  };
  raw.on('data', onData);
  raw.once('end', done);
  raw.once('close', done);
}
