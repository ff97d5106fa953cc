/**
 * The Icecast-style harbor of a station: a TCP listener on the station's harbor port that takes
 * ONE source client at a time (ffmpeg `icecast://`, BUTT, Mixxx, libshout) and feeds the body it
 * sends (MP3, Ogg, AAC: decodebin finds out) to the stdin of the station's child.
 *
 *   SOURCE /mount HTTP/1.0        (or ICE/1.0; legacy Icecast, libshout)
 *   PUT /mount HTTP/1.1           (Icecast 2.4+, ffmpeg; `Expect: 100-continue` is answered)
 *   Authorization: Basic base64("source:<password>")
 *
 * Answers: `HTTP/1.0 200 OK` (or `HTTP/1.1 100 Continue` when the client expects it), then the
 * body is piped to the child (back-pressure included). 401 for a wrong user or password, 403
 * `Mountpoint in use` while a source is connected, 405 for other methods, 501 for a chunked body,
 * 503 when the station has no child ready within the wait. When the source disconnects (or falls
 * silent on the wire for `idleTimeoutMs`), the child's stdin is ended: EOS, a clean exit, and the
 * supervisor starts the next child for the next source. When the child ends first, the source is
 * disconnected (source clients reconnect). The password is compared in constant time and never
 * logged.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import type { Writable } from 'node:stream';
import type { Logger } from 'pino';

export interface SourceInfo {
  remote: string;
  mount: string;
  method: string;
  content_type: string | null;
  user_agent: string | null;
  connected_at: string;
  bytes: number;
}

export interface HarborOptions {
  password: string;
  log: Logger;
  /** The stdin of a fresh child of the station, waited for; undefined when none comes in time. */
  claimInput: () => Promise<Writable | undefined>;
  /** A line for the station's log. */
  note: (text: string) => void;
  now?: () => number;
  headerTimeoutMs?: number;
  idleTimeoutMs?: number;
}

const MAX_HEADER_BYTES = 8192;

interface Request {
  method: string;
  mount: string;
  version: string;
  headers: Map<string, string>;
}

export function parseRequestHead(head: string): Request | undefined {
  const lines = head.split('\r\n');
  const first = /^([A-Z]+) (\S+) ((?:HTTP|ICE)\/1\.[01])$/.exec(lines[0] ?? '');
  if (first === null) return undefined;
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) return undefined;
    headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return { method: first[1] ?? '', mount: first[2] ?? '', version: first[3] ?? '', headers };
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/** Basic credentials `source:<password>`; constant time in the password. */
export function checkBasicAuth(header: string | undefined, password: string): boolean {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header ?? '');
  if (m?.[1] === undefined) return false;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return false;
  const userOk = decoded.slice(0, colon) === 'source';
  const passOk = timingSafeEqual(digest(decoded.slice(colon + 1)), digest(password));
  return userOk && passOk;
}

function reply(socket: Socket, status: string, extra: string[] = [], body = ''): void {
  const text = [`HTTP/1.0 ${status}`, 'Server: audio-engine', 'Content-Type: text/plain; charset=utf-8', ...extra, '', body].join('\r\n');
  socket.end(text);
}

export class IcecastHarbor {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private source: { socket: Socket; info: SourceInfo } | undefined;
  /** A source is past its checks and waits for a child: others are refused meanwhile. */
  private claiming = false;
  private readonly now: () => number;

  constructor(private readonly options: HarborOptions) {
    this.now = options.now ?? Date.now;
  }

  get listening(): boolean {
    return this.server?.listening === true;
  }

  sourceInfo(): SourceInfo | null {
    return this.source === undefined ? null : { ...this.source.info };
  }

  /** Listens; rejects with the system error (EADDRINUSE when another process holds the port). */
  listen(port: number, host: string): Promise<void> {
    if (this.server !== undefined) return Promise.resolve();
    const server = createServer((socket) => this.onConnection(socket));
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ port, host, exclusive: true }, () => {
        server.off('error', reject);
        server.on('error', (error) => this.options.log.error({ err: error, event: 'harbor-error' }, `harbor: ${error.message}`));
        this.server = server;
        resolve();
      });
    });
  }

  /** Stops listening and disconnects every client (the source's end reaches the child as EOS). */
  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Drops the connected source, if any. */
  disconnectSource(): void {
    this.source?.socket.destroy();
  }

  private onConnection(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.on('error', () => {
      // reset by the peer: 'close' follows
    });
    socket.setNoDelay(true);
    socket.setTimeout(this.options.headerTimeoutMs ?? 10_000, () => socket.destroy());
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > MAX_HEADER_BYTES) {
          socket.off('data', onData);
          reply(socket, '431 Request Header Fields Too Large');
        }
        return;
      }
      socket.off('data', onData);
      socket.pause();
      void this.onRequest(socket, head.subarray(0, end).toString('latin1'), head.subarray(end + 4));
    };
    socket.on('data', onData);
  }

  private async onRequest(socket: Socket, headText: string, rest: Buffer): Promise<void> {
    const remote = `${socket.remoteAddress ?? '?'}:${String(socket.remotePort ?? '?')}`;
    const request = parseRequestHead(headText);
    if (request === undefined) {
      reply(socket, '400 Bad Request', [], 'not an Icecast source request\n');
      return;
    }
    if (request.method !== 'SOURCE' && request.method !== 'PUT') {
      reply(socket, '405 Method Not Allowed', ['Allow: SOURCE, PUT'], 'this harbor takes source clients only (SOURCE or PUT)\n');
      return;
    }
    if (!checkBasicAuth(request.headers.get('authorization'), this.options.password)) {
      this.options.log.warn({ event: 'harbor-auth-failed', remote, mount: request.mount }, `harbor: source from ${remote} refused: wrong credentials`);
      this.options.note(`source from ${remote} refused: wrong credentials`);
      reply(socket, '401 Unauthorized', ['WWW-Authenticate: Basic realm="audio-engine harbor"'], 'authentication required\n');
      return;
    }
    if ((request.headers.get('transfer-encoding') ?? '').toLowerCase().includes('chunked')) {
      reply(socket, '501 Not Implemented', [], 'chunked transfer encoding is not supported; send a plain body\n');
      return;
    }
    if (this.source !== undefined || this.claiming) {
      this.options.log.warn({ event: 'harbor-busy', remote, mount: request.mount }, `harbor: source from ${remote} refused: a source is already connected`);
      this.options.note(`source from ${remote} refused: a source is already connected`);
      reply(socket, '403 Forbidden', [], 'Mountpoint in use\n');
      return;
    }
    this.claiming = true;
    let input: Writable | undefined;
    try {
      input = await this.options.claimInput();
    } finally {
      this.claiming = false;
    }
    if (socket.destroyed) {
      input?.end();
      return;
    }
    if (input === undefined || input.destroyed || input.writableEnded) {
      reply(socket, '503 Service Unavailable', ['Retry-After: 2'], 'the station is not ready for a source\n');
      return;
    }
    const info: SourceInfo = {
      remote,
      mount: request.mount,
      method: request.method,
      content_type: request.headers.get('content-type') ?? null,
      user_agent: request.headers.get('user-agent') ?? null,
      connected_at: new Date(this.now()).toISOString(),
      bytes: rest.length,
    };
    const source = { socket, info };
    this.source = source;
    const stdin = input;
    this.options.log.info(
      { event: 'source-connected', remote, mount: info.mount, content_type: info.content_type, user_agent: info.user_agent },
      `harbor: source connected from ${remote} (${request.method} ${info.mount}, ${info.content_type ?? 'no content type'})`,
    );
    this.options.note(`source connected from ${remote} (${request.method} ${info.mount}, ${info.content_type ?? 'no content type'})`);
    const expect100 = (request.headers.get('expect') ?? '').toLowerCase() === '100-continue';
    socket.write(expect100 ? 'HTTP/1.1 100 Continue\r\n\r\n' : 'HTTP/1.0 200 OK\r\nServer: audio-engine\r\n\r\n');
    socket.setTimeout(this.options.idleTimeoutMs ?? 10_000, () => {
      this.options.log.warn({ event: 'source-timeout', remote }, `harbor: source ${remote} sent nothing for ${this.options.idleTimeoutMs ?? 10_000} ms; dropping it`);
      socket.destroy();
    });
    // The child ended first (crash, stop, restart): the source goes too, and reconnects to the next one.
    const onChildGone = (): void => {
      socket.destroy();
    };
    stdin.once('close', onChildGone);
    stdin.once('error', onChildGone);
    socket.once('close', () => {
      stdin.off('close', onChildGone);
      stdin.off('error', onChildGone);
      socket.unpipe(stdin);
      if (!stdin.writableEnded && !stdin.destroyed) stdin.end(); // EOS for the child
      if (this.source === source) this.source = undefined;
      const seconds = ((this.now() - Date.parse(info.connected_at)) / 1000).toFixed(1);
      this.options.log.info(
        { event: 'source-disconnected', remote, mount: info.mount, bytes: info.bytes, seconds: Number(seconds) },
        `harbor: source ${remote} disconnected after ${seconds} s (${info.bytes} bytes)`,
      );
      this.options.note(`source ${remote} disconnected after ${seconds} s (${info.bytes} bytes)`);
    });
    socket.on('data', (chunk: Buffer) => {
      info.bytes += chunk.length;
    });
    if (rest.length > 0) stdin.write(rest);
    socket.pipe(stdin, { end: false });
    socket.resume();
  }
}
