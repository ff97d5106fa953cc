/**
 * Titles inside an Ogg stream (pure): each logical stream's comment header (Vorbis `\x03vorbis`,
 * Opus `OpusTags`) carries TITLE and ARTIST. A source that sends chained Ogg (ices2, ezstream,
 * liquidsoap %vorbis) starts a new chain with new comments at each track or title, and sends no
 * /admin/metadata: the harbor reads the title from the pages as they pass (RFC 3533 pages; the
 * comment packet is the second packet of a stream, assembled across pages, at most 64 KiB).
 */

const MAX_COMMENT_PACKET = 64 * 1024;
/** A page header is 27 bytes plus up to 255 lacing values. */
const MAX_PAGE_HEADER = 27 + 255;

interface StreamState {
  packets: number;
  partial: Buffer[];
  partialBytes: number;
  done: boolean;
}

export class OggTitles {
  private pending: Buffer = Buffer.alloc(0);
  private readonly streams = new Map<number, StreamState>();
  /** Not Ogg (no capture pattern where a page must start): stop looking. */
  private off = false;

  constructor(private readonly onTitle: (title: string) => void) {}

  push(chunk: Buffer): void {
    if (this.off) return;
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    for (;;) {
      const p = this.pending;
      if (p.length < 27) return;
      if (p.readUInt32BE(0) !== 0x4f676753) {
        // OggS
        this.off = true;
        this.pending = Buffer.alloc(0);
        return;
      }
      const segments = p[26] ?? 0;
      if (p.length < 27 + segments) return;
      const lacing = p.subarray(27, 27 + segments);
      let bodyLength = 0;
      for (const l of lacing) bodyLength += l;
      const total = 27 + segments + bodyLength;
      if (p.length < total) return;
      this.page(p[5] ?? 0, p.readUInt32LE(14), lacing, p.subarray(27 + segments, total));
      this.pending = p.subarray(total);
      if (this.pending.length > 0 && this.pending.length < MAX_PAGE_HEADER) this.pending = Buffer.from(this.pending);
    }
  }

  private page(flags: number, serial: number, lacing: Buffer, body: Buffer): void {
    if ((flags & 0x02) !== 0) this.streams.set(serial, { packets: 0, partial: [], partialBytes: 0, done: false }); // BOS: a new chain
    const stream = this.streams.get(serial);
    if (stream === undefined || stream.done) {
      if ((flags & 0x04) !== 0) this.streams.delete(serial); // EOS
      return;
    }
    let offset = 0;
    let start = 0;
    for (const l of lacing) {
      offset += l;
      if (l === 255) continue;
      this.piece(stream, body.subarray(start, offset), true);
      start = offset;
      if (stream.done) break;
    }
    if (!stream.done && start < offset) this.piece(stream, body.subarray(start, offset), false);
    if ((flags & 0x04) !== 0) this.streams.delete(serial);
  }

  /** A piece of a packet; `complete` ends the packet. Only the first two packets are kept. */
  private piece(stream: StreamState, bytes: Buffer, complete: boolean): void {
    if (stream.packets === 1 && stream.partialBytes + bytes.length <= MAX_COMMENT_PACKET) {
      stream.partial.push(bytes);
      stream.partialBytes += bytes.length;
    }
    if (!complete) return;
    if (stream.packets === 1) {
      stream.done = true;
      const title = titleFromComments(Buffer.concat(stream.partial));
      stream.partial = [];
      if (title !== undefined) this.onTitle(title);
    }
    stream.packets += 1;
  }
}

/** `ARTIST - TITLE` (or either alone) from a Vorbis or Opus comment packet. */
export function titleFromComments(packet: Buffer): string | undefined {
  let at: number;
  if (packet.subarray(0, 7).toString('latin1') === '\x03vorbis') at = 7;
  else if (packet.subarray(0, 8).toString('latin1') === 'OpusTags') at = 8;
  else return undefined;
  const u32 = (): number | undefined => {
    if (at + 4 > packet.length) return undefined;
    const v = packet.readUInt32LE(at);
    at += 4;
    return v;
  };
  const vendor = u32();
  if (vendor === undefined) return undefined;
  at += vendor;
  const count = u32();
  if (count === undefined) return undefined;
  const fields = new Map<string, string>();
  for (let i = 0; i < count; i++) {
    const length = u32();
    if (length === undefined || at + length > packet.length) break;
    const text = packet.subarray(at, at + length).toString('utf8');
    at += length;
    const eq = text.indexOf('=');
    if (eq > 0) {
      const key = text.slice(0, eq).toUpperCase();
      if (!fields.has(key)) fields.set(key, text.slice(eq + 1));
    }
  }
  const title = fields.get('TITLE');
  const artist = fields.get('ARTIST');
  if (title !== undefined && artist !== undefined) return `${artist} - ${title}`;
  return title ?? artist;
}
