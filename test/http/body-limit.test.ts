/**
 * A body over the limit is a 413 every common client reads, while it is still sending that body:
 * Node's fetch (undici), Node's http.request and curl, against the engine's own HTTP server
 * (createHttpServer, in process, no children). The connection stays open after the answer while
 * the rest of the body is read and dropped, within bounds (src/http/body-drain.ts).
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Fastify, { type FastifyInstance } from 'fastify';
import pino from 'pino';
import t, { type Test } from 'tap';
import { installBodyDrain } from '../../src/http/body-drain.js';
import { BODY_LIMIT, createHttpServer } from '../../src/http/server.js';

const MIB = 1024 * 1024;
const TOO_LARGE = { statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE', error: 'Payload Too Large', message: 'Request body is too large' };
/** A JSON body of `bytes` bytes. */
const jsonOf = (bytes: number): string => `{"pad":"${'y'.repeat(bytes - 10)}"}`;

async function listen(app: FastifyInstance, t: Test): Promise<number> {
  app.post('/echo', async (request) => ({ got: typeof request.body }));
  app.get('/ping', async () => ({ pong: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => app.close());
  return (app.server.address() as { port: number }).port;
}

/** One HTTP/1.1 answer read off a raw socket: status, headers, body (Content-Length framed). */
interface RawAnswer { status: number; headers: Record<string, string>; body: string }

/** Reads answers from a raw socket, in order. */
class RawReader {
  private buffer = Buffer.alloc(0);
  private waiting: (() => void) | undefined;
  ended = false;
  error: Error | undefined;

  constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.waiting?.();
    });
    socket.on('end', () => {
      this.ended = true;
      this.waiting?.();
    });
    socket.on('error', (error) => {
      this.error = error;
      this.waiting?.();
    });
    socket.on('close', () => this.waiting?.());
  }

  async answer(): Promise<RawAnswer> {
    for (;;) {
      const head = this.buffer.indexOf('\r\n\r\n');
      if (head >= 0) {
        const lines = this.buffer.subarray(0, head).toString('latin1').split('\r\n');
        const headers = Object.fromEntries(lines.slice(1).map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
        const length = Number(headers['content-length'] ?? 0);
        if (this.buffer.length >= head + 4 + length) {
          const body = this.buffer.subarray(head + 4, head + 4 + length).toString('utf8');
          this.buffer = this.buffer.subarray(head + 4 + length);
          return { status: Number(lines[0]?.split(' ')[1]), headers, body };
        }
      }
      if (this.ended || this.error !== undefined || this.socket.destroyed) throw new Error(`connection ended before an answer: ${this.error?.message ?? 'end'}`);
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }

  /** Resolves when the server has closed the connection (end or reset). */
  async closed(): Promise<void> {
    while (!this.ended && !this.socket.destroyed) await new Promise<void>((resolve) => (this.waiting = resolve));
  }
}

async function rawConnect(port: number): Promise<RawReader> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return new RawReader(socket);
}

/** Writes and waits until the kernel took it; rejects on a write error (EPIPE, ECONNRESET). */
const write = (socket: Socket, data: string | Buffer): Promise<void> =>
  new Promise((resolve, reject) => socket.write(data, (error) => (error ? reject(error) : resolve())));

void t.test('every client reads the 413 of a 3 MiB body with its JSON error', async (t) => {
  const port = await listen(createHttpServer(pino({ level: 'silent' }), 'rest', undefined), t);
  const url = `http://127.0.0.1:${port}/echo`;
  const body = jsonOf(3 * MIB);

  void t.test('Node fetch (undici), the body as a string', async (t) => {
    for (let i = 0; i < 5; i++) {
      const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
      t.equal(res.status, 413);
      t.same(await res.json(), TOO_LARGE);
    }
  });

  void t.test('Node fetch, the body as a stream (chunked)', async (t) => {
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 3 * MIB) return controller.close();
        sent += 64 * 1024;
        controller.enqueue(new Uint8Array(64 * 1024).fill(0x20));
      },
    });
    const res = await fetch(url, { method: 'POST', body: stream, duplex: 'half', headers: { 'content-type': 'application/json' } });
    t.equal(res.status, 413);
    t.same(await res.json(), TOO_LARGE);
  });

  void t.test('Node http.request: the answer, and the whole body sent without a write error', async (t) => {
    const result = await new Promise<{ status: number | undefined; text: string; sent: boolean }>((resolve, reject) => {
      let answer: { status: number | undefined; text: string } | undefined;
      let sent = false;
      const done = (): void => {
        if (answer !== undefined && sent) resolve({ ...answer, sent });
      };
      const req = request({ host: '127.0.0.1', port, path: '/echo', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          answer = { status: res.statusCode, text };
          done();
        });
      });
      req.on('error', reject);
      req.end(body, () => {
        sent = true;
        done();
      });
    });
    t.equal(result.status, 413);
    t.same(JSON.parse(result.text), TOO_LARGE);
    t.ok(result.sent, 'the whole body was written');
  });

  void t.test('curl, with and without Expect: 100-continue', async (t) => {
    const dir = t.testdir({});
    const file = join(dir, 'big.json');
    await writeFile(file, body);
    for (const expect of [[], ['-H', 'Expect:']]) {
      const { stdout } = await promisify(execFile)('curl', ['-sS', '-X', 'POST', '-H', 'Content-Type: application/json', ...expect, '--data-binary', `@${file}`, '-w', '\n%{http_code}', url]);
      const [text, code] = [stdout.slice(0, stdout.lastIndexOf('\n')), stdout.slice(stdout.lastIndexOf('\n') + 1)];
      t.equal(code, '413', `curl ${expect.join(' ')}`);
      t.same(JSON.parse(text), TOO_LARGE);
    }
  });

  void t.test('the connection outlives the answer: the rest of the body is read, the next request answered', async (t) => {
    // The client reads the whole 413 before it sends the rest: a server that closed the socket
    // after its answer resets the connection here, whatever the timing.
    const raw = await rawConnect(port);
    t.teardown(() => raw.socket.destroy());
    const bytes = Buffer.from(body);
    const first = 128 * 1024;
    await write(raw.socket, `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${bytes.length}\r\n\r\n`);
    await write(raw.socket, bytes.subarray(0, first));
    const answer = await raw.answer();
    t.equal(answer.status, 413);
    t.same(JSON.parse(answer.body), TOO_LARGE);
    t.not(answer.headers.connection, 'close');
    await write(raw.socket, bytes.subarray(first));
    await write(raw.socket, 'GET /ping HTTP/1.1\r\nHost: x\r\n\r\n');
    const next = await raw.answer();
    t.equal(next.status, 200);
    t.same(JSON.parse(next.body), { pong: true });
  });

  void t.test('a declared body over 16 MiB is not read: 413, then the connection is closed', async (t) => {
    const raw = await rawConnect(port);
    t.teardown(() => raw.socket.destroy());
    await write(raw.socket, `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${1024 * MIB}\r\n\r\n{"pad":"`);
    const answer = await raw.answer();
    t.equal(answer.status, 413);
    t.equal(answer.headers.connection, 'close');
    await raw.closed();
    t.pass('closed by the server');
  });

  void t.test('the same for another answer sent before the body is read: 415', async (t) => {
    const raw = await rawConnect(port);
    t.teardown(() => raw.socket.destroy());
    const bytes = Buffer.alloc(3 * MIB, 0x61);
    await write(raw.socket, `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: ${bytes.length}\r\n\r\n`);
    const answer = await raw.answer();
    t.equal(answer.status, 415);
    t.equal((JSON.parse(answer.body) as { code: string }).code, 'FST_ERR_CTP_INVALID_MEDIA_TYPE');
    await write(raw.socket, bytes);
    await write(raw.socket, 'GET /ping HTTP/1.1\r\nHost: x\r\n\r\n');
    t.equal((await raw.answer()).status, 200);
  });

  void t.test('a body under the limit is still a 200', async (t) => {
    const res = await fetch(url, { method: 'POST', body: jsonOf(BODY_LIMIT - 1), headers: { 'content-type': 'application/json' } });
    t.equal(res.status, 200);
    t.same(await res.json(), { got: 'object' });
  });
});

void t.test('the drain is bounded: too many bytes or too slow a client and the connection is closed', async (t) => {
  /** A server whose body limit is 1 KiB, with its own drain bounds. */
  const server = async (bytes: number, ms: number): Promise<number> => {
    const app = Fastify({ bodyLimit: 1024 });
    installBodyDrain(app, { bytes, ms });
    return listen(app, t);
  };
  const patient = await server(256 * 1024, 600_000);
  const hasty = await server(256 * 1024, 100);

  void t.test('a chunked body that goes on past the byte bound', async (t) => {
    const raw = await rawConnect(patient);
    t.teardown(() => raw.socket.destroy());
    await write(raw.socket, 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
    const chunk = Buffer.concat([Buffer.from(`${(16 * 1024).toString(16)}\r\n`), Buffer.alloc(16 * 1024, 0x20), Buffer.from('\r\n')]);
    await write(raw.socket, chunk);
    t.equal((await raw.answer()).status, 413);
    // Keep sending until the server cuts the connection (a write error or its end).
    let written = 0;
    try {
      while (!raw.ended && !raw.socket.destroyed && written < 64 * MIB) {
        await write(raw.socket, chunk);
        written += chunk.length;
      }
    } catch {
      // the server reset the connection
    }
    await raw.closed();
    t.ok(written < 64 * MIB, `closed after about ${Math.round(written / 1024)} KiB more`);
  });

  void t.test('a client that stops sending', async (t) => {
    const raw = await rawConnect(hasty);
    t.teardown(() => raw.socket.destroy());
    await write(raw.socket, `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${100 * 1024}\r\n\r\n{"pad":"`);
    t.equal((await raw.answer()).status, 413);
    await raw.closed();
    t.pass('closed by the server');
  });

  void t.test('a body within the byte bound is read and the connection kept', async (t) => {
    const raw = await rawConnect(patient);
    t.teardown(() => raw.socket.destroy());
    await write(raw.socket, `POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${200 * 1024}\r\n\r\n`);
    t.equal((await raw.answer()).status, 413);
    await write(raw.socket, Buffer.alloc(200 * 1024, 0x20));
    await write(raw.socket, 'GET /ping HTTP/1.1\r\nHost: x\r\n\r\n');
    t.equal((await raw.answer()).status, 200);
  });
});
