/**
 * What an Icecast source client sends before its body, read the way Icecast 2.4 reads it (pure):
 * the request head (lines may end in `\r\n` or in a bare `\n`: darkice 1.3), Basic credentials,
 * how the body is framed (`Content-Length`, `Transfer-Encoding: chunked`, or until the connection
 * closes), and the metadata update `GET /admin/metadata?mode=updinfo&mount=...&song=...` that
 * libshout, liquidsoap and ezstream send for song titles.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

export interface SourceRequest {
  method: string;
  /** The request target as sent (path and query). */
  target: string;
  /** The path of the target, without the query. */
  path: string;
  query: URLSearchParams;
  version: string;
  headers: Map<string, string>;
}

/** Where the head ends in `buffer`: the index of the body's first byte, or -1 while it is incomplete. */
export function findHeadEnd(buffer: Buffer): number {
  for (let i = buffer.indexOf(0x0a); i >= 0; i = buffer.indexOf(0x0a, i + 1)) {
    if (buffer[i + 1] === 0x0a) return i + 2; // \n\n
    if (buffer[i + 1] === 0x0d && buffer[i + 2] === 0x0a) return i + 3; // \n\r\n
  }
  return -1;
}

/** The request line and header lines (the head without its empty last line); undefined when malformed. */
export function parseRequestHead(head: string): SourceRequest | undefined {
  const lines = head.replace(/\r?\n(\r?\n)?$/, '').split(/\r?\n/);
  const first = /^([A-Z]+) (\S+) ((?:HTTP|ICE)\/1\.[01])$/.exec(lines[0] ?? '');
  if (first === null) return undefined;
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) return undefined;
    headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  const target = first[2] ?? '';
  const question = target.indexOf('?');
  return {
    method: first[1] ?? '',
    target,
    path: question < 0 ? target : target.slice(0, question),
    query: new URLSearchParams(question < 0 ? '' : target.slice(question + 1)),
    version: first[3] ?? '',
    headers,
  };
}

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

export type Credentials = 'ok' | 'missing' | 'wrong';

/** Basic credentials `source:<password>`; constant time in the password. `missing`: no Authorization header at all. */
export function checkCredentials(header: string | undefined, password: string): Credentials {
  if (header === undefined || header === '') return 'missing';
  return checkBasicAuth(header, password) ? 'ok' : 'wrong';
}

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

/** How the body of a source request is framed. */
export type BodyFraming = { kind: 'until-close' } | { kind: 'length'; bytes: number } | { kind: 'chunked' };

/** The framing of the body, or the reason it cannot be read (answered 501 or 400). */
export function bodyFraming(headers: Map<string, string>): BodyFraming | { refuse: 400 | 501; reason: string } {
  const encoding = headers.get('transfer-encoding');
  if (encoding !== undefined) {
    const codings = encoding.toLowerCase().split(',').map((c) => c.trim()).filter((c) => c !== '' && c !== 'identity');
    if (codings.length === 0) return { kind: 'until-close' };
    if (codings.length === 1 && codings[0] === 'chunked') return { kind: 'chunked' };
    return { refuse: 501, reason: `transfer encoding ${codings.join(', ')} is not supported` };
  }
  const length = headers.get('content-length');
  if (length === undefined) return { kind: 'until-close' };
  if (!/^[0-9]{1,15}$/.test(length)) return { refuse: 400, reason: 'Content-Length is not a number' };
  return { kind: 'length', bytes: Number(length) };
}

/** Longest title kept (characters); longer ones are cut. */
export const MAX_TITLE_CHARS = 512;

export type MetadataUpdate = { mount: string; title: string } | { refuse: 400; reason: string };

/**
 * A metadata request's query as Icecast 2.4 reads it: `mode=updinfo`, `mount`, and `song` (or
 * `artist` and `title`, joined with " - "), in the `charset` given (UTF-8 by default here; a
 * query that is not valid UTF-8 and names no charset is read as ISO-8859-1, as Icecast reads
 * MP3 mounts). Control characters are dropped: the title is shown and logged, never used.
 */
export function parseMetadataQuery(rawQuery: string): MetadataUpdate {
  const params = new Map<string, Buffer>();
  for (const pair of rawQuery.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const key = percentDecode(eq < 0 ? pair : pair.slice(0, eq)).toString('latin1').toLowerCase();
    if (!params.has(key)) params.set(key, percentDecode(eq < 0 ? '' : pair.slice(eq + 1)));
  }
  const charset = params.get('charset')?.toString('latin1').toLowerCase().replace(/[^a-z0-9]/g, '');
  const text = (key: string): string | undefined => {
    const bytes = params.get(key);
    if (bytes === undefined) return undefined;
    if (charset === 'iso88591' || charset === 'latin1') return bytes.toString('latin1');
    const utf8 = bytes.toString('utf8');
    return charset === undefined && utf8.includes('\uFFFD') ? bytes.toString('latin1') : utf8;
  };
  const mode = text('mode');
  if (mode !== 'updinfo') return { refuse: 400, reason: mode === undefined ? 'Missing parameter: mode' : 'No such mode' };
  const mount = text('mount');
  if (mount === undefined || mount === '') return { refuse: 400, reason: 'Missing parameter: mount' };
  const song = text('song');
  const artist = text('artist');
  const title = text('title');
  const joined = song ?? (artist !== undefined && title !== undefined ? `${artist} - ${title}` : (title ?? artist));
  if (joined === undefined) return { refuse: 400, reason: 'Missing parameter: song' };
  return { mount, title: cleanTitle(joined) };
}

function percentDecode(text: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x25 && /^[0-9A-Fa-f]{2}$/.test(text.slice(i + 1, i + 3))) {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (c === 0x2b) {
      bytes.push(0x20); // '+' in a query is a space
    } else {
      bytes.push(c & 0xff);
    }
  }
  return Buffer.from(bytes);
}

/** Control characters dropped, surrounding space trimmed, at most MAX_TITLE_CHARS characters. */
export function cleanTitle(title: string): string {
  // eslint-disable-next-line no-control-regex
  return [...title.replace(/[\u0000-\u001f\u007f-\u009f]/g, '').trim()].slice(0, MAX_TITLE_CHARS).join('');
}

/** Icecast 2.4's answer to a successful metadata update. */
export const METADATA_OK_BODY = '<?xml version="1.0"?>\n<iceresponse><message>Metadata update successful</message><return>1</return></iceresponse>\n';
