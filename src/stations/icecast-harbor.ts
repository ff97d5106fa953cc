/**
 * The Icecast-style harbor of a station: a TCP listener on the station's harbor port that takes
 * ONE source client at a time and feeds the audio it sends (MP3, Ogg, AAC: decodebin finds out)
 * to the stdin of the station's child. It reads what Icecast 2.4 reads from real source clients
 * (icecast-request.ts):
 *
 *   SOURCE /mount HTTP/1.0 | ICE/1.0   (libshout, darkice, BUTT, Mixxx; lines may end in a bare \n)
 *   PUT /mount HTTP/1.1                (Icecast 2.4+: ffmpeg, curl -T, ices2, libshout 2.4)
 *   Authorization: Basic base64("source:<password>")
 *   body: until the connection closes, `Content-Length` bytes, or `Transfer-Encoding: chunked`
 *
 *   GET /admin/metadata?mode=updinfo&mount=/m&song=...   (title updates: libshout, liquidsoap, ezstream)
 *
 * Accepted: `HTTP/1.1 100 Continue` first when the client expects it, then `HTTP/1.0 200 OK` at
 * once (Icecast's order), then the body is piped to the child (back-pressure included). The end
 * of a framed body is the source's end: the connection is closed, so the client has its final
 * status. Refused: 400 (malformed), 401 (credentials: a request without them is the normal
 * challenge, logged as info; wrong ones are a warning), 403 `Mountpoint in use`, 405, 431 (head
 * over 8 KiB), 501 (a transfer coding other than chunked), 503 (no child ready in time); each
 * refusal is logged once with the client's address and the reason.
 *
 * No source can lock the station: one that sends nothing for `idleTimeoutMs`, or whose audio does
 * not start playing within `firstAudioMs`, is dropped. When a source ends, the child's stdin is
 * ended (EOS: the child plays what it holds, exits cleanly, and the supervisor starts the next
 * child); a child that got no byte is handed to the next source as it is; one whose bytes do not
 * start playing (the harbor dropped the source, or the client left and the child does not play
 * within SETTLE_MS) is renewed by the station (a stop and a start: no failure, no back-off). When
 * the child ends first, the source is disconnected (source clients reconnect). The password is
 * compared in constant time and never logged.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { Writable } from 'node:stream';
import type { Logger } from 'pino';
import {
  bodyFraming,
  checkCredentials,
  cleanTitle,
  findHeadEnd,
  METADATA_OK_BODY,
  parseMetadataQuery,
  parseRequestHead,
  type SourceRequest,
} from './icecast-request.js';
import { OggTitles } from './ogg-titles.js';
import { SourceBody } from './source-body.js';

export { checkBasicAuth, parseRequestHead } from './icecast-request.js';

export interface SourceInfo {
  remote: string;
  mount: string;
  method: string;
  content_type: string | null;
  user_agent: string | null;
  connected_at: string;
  /** Audio bytes of the body passed to the child so far. */
  bytes: number;
  /** The last title: from a metadata update (`/admin/metadata`) or an Ogg chain's comments; or null. */
  title: string | null;
  title_updated_at: string | null;
}

export interface HarborOptions {
  password: string;
  log: Logger;
  /** The stdin of a fresh child of the station, waited for; undefined when none comes in time. */
  claimInput: () => Promise<Writable | undefined>;
  /** The source ended before writing a byte: the same child waits for the next source. */
  returnInput: (input: Writable) => void;
  /** The harbor dropped a source whose bytes never played: the station replaces the child cleanly. */
  renewInput: (input: Writable) => void;
  /** Whether the station's child plays (has reached PLAYING). */
  playing: () => boolean;
  /** A line for the station's log. */
  note: (text: string) => void;
  now?: () => number;
  headerTimeoutMs?: number;
  idleTimeoutMs?: number;
  /** How long an accepted source may take until its audio plays. */
  firstAudioMs?: number;
}

const MAX_HEADER_BYTES = 8192;
/** How long the end of a source waits for what its body still holds to reach the child. */
const DRAIN_MS = 2000;
/** How long a child that got bytes from a source that has left may take to start playing them. */
const SETTLE_MS = 3000;

interface Answer {
  status: string;
  headers?: string[];
  body?: string;
}

const ANSWER_HEADERS = ['Server: audio-engine', 'Connection: close'];

function reply(socket: Socket, answer: Answer, contentType = 'text/plain; charset=utf-8'): void {
  const body = answer.body ?? '';
  const head = [`HTTP/1.0 ${answer.status}`, ...ANSWER_HEADERS, `Content-Type: ${contentType}`, `Content-Length: ${Buffer.byteLength(body)}`, ...(answer.headers ?? [])];
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
}

const CHALLENGE = ['WWW-Authenticate: Basic realm="audio-engine harbor"'];

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
    const remote = `${socket.remoteAddress ?? '?'}:${String(socket.remotePort ?? '?')}`;
    const headerTimeoutMs = this.options.headerTimeoutMs ?? 10_000;
    socket.setTimeout(headerTimeoutMs, () => {
      this.logRefusal('warn', remote, 'client', null, 'timeout', `no complete request within ${headerTimeoutMs} ms`);
      socket.destroy();
    });
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer): void => {
      head = Buffer.concat([head, chunk]);
      const end = findHeadEnd(head);
      if (end < 0 || end > MAX_HEADER_BYTES) {
        if (head.length > MAX_HEADER_BYTES || end > MAX_HEADER_BYTES) {
          socket.off('data', onData);
          this.refuse(socket, remote, 'client', null, { status: '431 Request Header Fields Too Large' }, `request head over ${MAX_HEADER_BYTES} bytes`);
        }
        return;
      }
      socket.off('data', onData);
      socket.pause();
      void this.onRequest(socket, remote, head.subarray(0, end).toString('latin1'), head.subarray(end));
    };
    socket.on('data', onData);
  }

  /** Logs a refusal once (warning unless said otherwise) and adds it to the station's log. */
  private logRefusal(level: 'warn' | 'info', remote: string, what: string, mount: string | null, status: string, reason: string): void {
    const text = `${what} from ${remote} refused (${status}): ${reason}`;
    this.options.log[level]({ event: 'harbor-refused', remote, mount, status, reason }, `harbor: ${text}`);
    this.options.note(text);
  }

  private refuse(socket: Socket, remote: string, what: string, mount: string | null, answer: Answer, reason: string, level: 'warn' | 'info' = 'warn'): void {
    this.logRefusal(level, remote, what, mount, answer.status.slice(0, 3), reason);
    reply(socket, { ...answer, body: answer.body ?? `${reason}\n` });
  }

  /** Credentials of a source or metadata request: true when they are right; otherwise answered 401. */
  private authorized(socket: Socket, remote: string, what: string, request: SourceRequest): boolean {
    const credentials = checkCredentials(request.headers.get('authorization'), this.options.password);
    if (credentials === 'ok') return true;
    if (credentials === 'missing') {
      // Clients first try without credentials and send them after this challenge.
      const text = `${what} from ${remote} sent no credentials: 401 challenge`;
      this.options.log.info({ event: 'harbor-auth-challenge', remote, mount: request.path }, `harbor: ${text}`);
      this.options.note(text);
      reply(socket, { status: '401 Unauthorized', headers: CHALLENGE, body: 'authentication required\n' });
      return false;
    }
    this.refuse(socket, remote, what, request.path, { status: '401 Unauthorized', headers: CHALLENGE, body: 'authentication required\n' }, 'wrong credentials');
    return false;
  }

  private async onRequest(socket: Socket, remote: string, headText: string, rest: Buffer): Promise<void> {
    const request = parseRequestHead(headText);
    if (request === undefined) {
      this.refuse(socket, remote, 'client', null, { status: '400 Bad Request' }, 'not an Icecast source request');
      return;
    }
    if (request.method === 'GET' && (request.path === '/admin/metadata' || request.path === '/admin/metadata.xsl')) {
      this.onMetadata(socket, remote, request);
      return;
    }
    if (request.method !== 'SOURCE' && request.method !== 'PUT') {
      this.refuse(socket, remote, 'client', request.path, { status: '405 Method Not Allowed', headers: ['Allow: SOURCE, PUT, GET'] }, `method ${request.method} ${request.path}: this harbor takes source clients (SOURCE, PUT) and metadata updates (GET /admin/metadata)`);
      return;
    }
    if (!this.authorized(socket, remote, 'source', request)) return;
    const framing = bodyFraming(request.headers);
    if ('refuse' in framing) {
      this.refuse(socket, remote, 'source', request.path, { status: framing.refuse === 400 ? '400 Bad Request' : '501 Not Implemented' }, framing.reason);
      return;
    }
    if (this.source !== undefined || this.claiming) {
      this.refuse(socket, remote, 'source', request.path, { status: '403 Forbidden', body: 'Mountpoint in use\n' }, 'a source is already connected');
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
      if (input !== undefined) this.options.returnInput(input);
      return;
    }
    if (input === undefined || input.destroyed || input.writableEnded) {
      this.refuse(socket, remote, 'source', request.path, { status: '503 Service Unavailable', headers: ['Retry-After: 2'] }, 'the station has no child ready for a source');
      return;
    }
    this.accept(socket, remote, request, framing, input, rest);
  }

  private accept(socket: Socket, remote: string, request: SourceRequest, framing: Exclude<ReturnType<typeof bodyFraming>, { refuse: unknown }>, stdin: Writable, rest: Buffer): void {
    const info: SourceInfo = {
      remote,
      mount: request.path,
      method: request.method,
      content_type: request.headers.get('content-type') ?? null,
      user_agent: request.headers.get('user-agent') ?? null,
      connected_at: new Date(this.now()).toISOString(),
      bytes: 0,
      title: null,
      title_updated_at: null,
    };
    const source = { socket, info };
    this.source = source;
    const framed = framing.kind === 'until-close' ? '' : framing.kind === 'chunked' ? ', chunked' : `, ${framing.bytes} bytes`;
    const what = `${request.method} ${info.mount}, ${info.content_type ?? 'no content type'}${framed}`;
    this.options.log.info(
      { event: 'source-connected', remote, mount: info.mount, content_type: info.content_type, user_agent: info.user_agent, framing: framing.kind },
      `harbor: source connected from ${remote} (${what})`,
    );
    this.options.note(`source connected from ${remote} (${what})`);
    const expect100 = (request.headers.get('expect') ?? '').toLowerCase() === '100-continue';
    socket.write(`${expect100 ? 'HTTP/1.1 100 Continue\r\nContent-Length: 0\r\n\r\n' : ''}HTTP/1.0 200 OK\r\nServer: audio-engine\r\n\r\n`);

    const body = new SourceBody(framing);
    let ended = false;
    let firstAudio: NodeJS.Timeout | undefined;
    /** `dropped`: the harbor ends the source (timeouts, a malformed body), not the client. */
    const end = (why: string, level: 'info' | 'warn' = 'info', dropped = false): void => {
      if (ended) return;
      ended = true;
      if (firstAudio !== undefined) clearTimeout(firstAudio);
      socket.setTimeout(0);
      stdin.off('close', onChildGone);
      stdin.off('error', onChildGone);
      socket.unpipe(body);
      body.unpipe(stdin);
      if (this.source === source) this.source = undefined;
      const childGone = stdin.destroyed || stdin.writableEnded;
      let after = '';
      if (!childGone) {
        if (info.bytes === 0) {
          this.options.returnInput(stdin);
          after = '; no audio came: the child waits for the next source';
        } else if (this.options.playing()) {
          stdin.end(); // EOS: the child plays what it holds, then ends cleanly
        } else if (dropped) {
          this.options.renewInput(stdin);
          after = '; its audio never played: the child is replaced';
        } else {
          void this.settle(stdin, remote);
        }
      }
      const seconds = ((this.now() - Date.parse(info.connected_at)) / 1000).toFixed(1);
      const text = `source ${remote} disconnected after ${seconds} s (${info.bytes} bytes): ${why}${after}`;
      this.options.log[level]({ event: 'source-disconnected', remote, mount: info.mount, bytes: info.bytes, seconds: Number(seconds), reason: why }, `harbor: ${text}`);
      this.options.note(text);
      if (socket.destroyed) return;
      if (body.complete) socket.end(); // the client has had its final status: a clean close
      else socket.destroy();
    };
    // The child ended first (crash, stop, restart): the source goes too, and reconnects to the next one.
    const onChildGone = (): void => end('the station child ended');
    stdin.once('close', onChildGone);
    stdin.once('error', onChildGone);
    // The body ends (its framing says so, or the client closed): what the body holds still goes to
    // the child (the pipe waits for it), then the source ends; bounded, in case the child stalls.
    let draining = false;
    const drain = (why: string): void => {
      if (draining || ended) return;
      draining = true;
      socket.unpipe(body);
      const bound = setTimeout(() => end(why), DRAIN_MS);
      body.once('end', () => {
        clearTimeout(bound);
        end(why);
      });
      body.end();
    };
    socket.once('close', () => drain('the client closed the connection'));
    body.once('complete', () => drain('the body is complete'));
    body.once('error', (error) => end(`malformed body: ${error.message}`, 'warn', true));
    const idleMs = this.options.idleTimeoutMs ?? 10_000;
    socket.setTimeout(idleMs, () => end(`nothing received for ${idleMs} ms`, 'warn', true));
    const firstAudioMs = this.options.firstAudioMs ?? 10_000;
    const checkAudio = (): void => {
      firstAudio = undefined;
      if (!ended && !this.options.playing()) end(`its audio did not start playing within ${firstAudioMs} ms`, 'warn', true);
    };
    firstAudio = setTimeout(checkAudio, firstAudioMs);
    // Chained Ogg carries its titles inside (each chain's comment header).
    const oggTitles = new OggTitles((title) => this.setTitle(info, remote, title, 'ogg'));
    body.on('data', (chunk: Buffer) => {
      info.bytes += chunk.length;
      oggTitles.push(chunk);
    });
    body.pipe(stdin, { end: false });
    if (body.startComplete()) return;
    if (rest.length > 0) body.write(rest);
    if (draining || ended) return;
    socket.pipe(body, { end: false });
    socket.resume();
  }

  /**
   * The client ended its source before the child played (a fast upload still prerolling, or a
   * client that sent only headers): once the child plays what it got, EOS ends it cleanly; if it
   * does not play within SETTLE_MS, what it got was no audio, and the station replaces the child
   * (no failure, no back-off).
   */
  private async settle(stdin: Writable, remote: string): Promise<void> {
    const until = this.now() + SETTLE_MS;
    while (!stdin.destroyed && !stdin.writableEnded) {
      if (this.options.playing()) {
        stdin.end();
        return;
      }
      if (this.now() >= until) {
        const text = `source ${remote} left before its audio played: the child is replaced`;
        this.options.log.info({ event: 'source-no-audio', remote }, `harbor: ${text}`);
        this.options.note(text);
        this.options.renewInput(stdin);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** `GET /admin/metadata?mode=updinfo&mount=...&song=...`: the title of the connected source. */
  private onMetadata(socket: Socket, remote: string, request: SourceRequest): void {
    if (!this.authorized(socket, remote, 'metadata update', request)) return;
    const question = request.target.indexOf('?');
    const update = parseMetadataQuery(question < 0 ? '' : request.target.slice(question + 1));
    if ('refuse' in update) {
      this.refuse(socket, remote, 'metadata update', null, { status: '400 Bad Request' }, update.reason);
      return;
    }
    const source = this.source;
    if (source === undefined || source.info.mount !== update.mount) {
      this.refuse(socket, remote, 'metadata update', update.mount, { status: '400 Bad Request' }, 'Source does not exist');
      return;
    }
    this.setTitle(source.info, remote, update.title, 'metadata');
    reply(socket, { status: '200 OK', body: METADATA_OK_BODY }, 'text/xml');
  }

  /** Stores, logs and notes the connected source's title (from /admin/metadata or the Ogg stream). */
  private setTitle(info: SourceInfo, remote: string, raw: string, from: 'metadata' | 'ogg'): void {
    const title = cleanTitle(raw);
    if (title === '') return;
    info.title = title;
    info.title_updated_at = new Date(this.now()).toISOString();
    this.options.log.info({ event: 'source-title', remote, mount: info.mount, title, from }, `harbor: title on ${info.mount}: ${title}`);
    this.options.note(`title on ${info.mount}: ${title}`);
  }
}
