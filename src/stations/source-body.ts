/**
 * The body of a source request as a stream of audio bytes: passed through until the connection
 * closes, cut at `Content-Length`, or decoded from `Transfer-Encoding: chunked` (RFC 9112 7.1:
 * size line with optional extensions, data, CRLF; a zero-size chunk and the trailer end it).
 * `complete` is emitted once the framing says the body is over (never for `until-close`); a
 * malformed chunk is an error. Bytes after the end of the body are ignored.
 */
import { Transform, type TransformCallback } from 'node:stream';
import type { BodyFraming } from './icecast-request.js';

/** A chunk-size line longer than this is not a chunk-size line. */
const MAX_SIZE_LINE = 1024;

export class SourceBody extends Transform {
  private done = false;
  private remaining: number;
  /** Chunked: what is being read now. */
  private phase: 'size' | 'data' | 'data-end' | 'trailer' = 'size';
  private line = '';

  constructor(private readonly framing: BodyFraming) {
    super();
    this.remaining = framing.kind === 'length' ? framing.bytes : 0;
  }

  /** The framing has said the body is over. */
  get complete(): boolean {
    return this.done;
  }

  /** For `length` bodies of 0 bytes: complete before any data. */
  startComplete(): boolean {
    if (this.framing.kind === 'length' && this.remaining === 0) this.finish();
    return this.done;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.done) {
      callback();
      return;
    }
    try {
      switch (this.framing.kind) {
        case 'until-close':
          this.push(chunk);
          break;
        case 'length': {
          const take = Math.min(this.remaining, chunk.length);
          if (take > 0) this.push(chunk.subarray(0, take));
          this.remaining -= take;
          if (this.remaining === 0) this.finish();
          break;
        }
        case 'chunked':
          this.chunked(chunk);
          break;
      }
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  private finish(): void {
    if (this.done) return;
    this.done = true;
    this.emit('complete');
  }

  private chunked(chunk: Buffer): void {
    let i = 0;
    while (i < chunk.length && !this.done) {
      switch (this.phase) {
        case 'size':
        case 'trailer':
        case 'data-end': {
          const nl = chunk.indexOf(0x0a, i);
          const end = nl < 0 ? chunk.length : nl;
          this.line += chunk.subarray(i, end).toString('latin1');
          if (this.line.length > MAX_SIZE_LINE) throw new Error('chunked body: a chunk-size line is too long');
          i = end;
          if (nl < 0) break;
          i = nl + 1;
          const line = this.line.replace(/\r$/, '');
          this.line = '';
          this.endOfLine(line);
          break;
        }
        case 'data': {
          const take = Math.min(this.remaining, chunk.length - i);
          this.push(chunk.subarray(i, i + take));
          i += take;
          this.remaining -= take;
          if (this.remaining === 0) this.phase = 'data-end';
          break;
        }
      }
    }
  }

  private endOfLine(line: string): void {
    switch (this.phase) {
      case 'size': {
        const m = /^([0-9A-Fa-f]{1,12})[ \t]*(;.*)?$/.exec(line);
        if (m?.[1] === undefined) throw new Error('chunked body: malformed chunk size');
        this.remaining = parseInt(m[1], 16);
        this.phase = this.remaining === 0 ? 'trailer' : 'data';
        return;
      }
      case 'data-end':
        if (line !== '') throw new Error('chunked body: a chunk does not end with CRLF');
        this.phase = 'size';
        return;
      case 'trailer':
        if (line === '') this.finish(); // trailer fields before the empty line are ignored
        return;
      case 'data':
        return;
    }
  }
}
