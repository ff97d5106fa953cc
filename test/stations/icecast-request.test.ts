/** The Icecast request as real source clients send it (heads captured from darkice 1.3, libshout 2.4.6, curl 7.88), and body framing. */
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import t from 'tap';
import { bodyFraming, checkCredentials, cleanTitle, findHeadEnd, parseMetadataQuery, parseRequestHead } from '../../src/stations/icecast-request.js';
import { SourceBody } from '../../src/stations/source-body.js';

// Captured on this machine from darkice 1.3 (header lines end in a bare \n, the head in \r\n\r\n).
const DARKICE = 'SOURCE /live HTTP/1.0\nContent-type: audio/mpeg\nAuthorization: Basic c291cmNlOmhhY2ttZQ==\nUser-Agent: DarkIce/1.3 (http://code.google.com/p/darkice/)\nice-bitrate: 192\nice-public: 0\nice-name: darkice test\r\n\r\n';
// libshout 2.4.6 (ezstream), its title update.
const LIBSHOUT_META = 'GET /admin/metadata?mode=updinfo&mount=%2fez%2emp3&charset=UTF%2d8&song=Track%20A HTTP/1.1\r\nHost: 127.0.0.1:9777\r\nUser-Agent: libshout/2.4.6\r\nAuthorization: Basic c291cmNlOmhhY2ttZQ==\r\n\r\n';

void t.test('request heads end in \\r\\n\\r\\n, \\n\\n or a mix; lines in \\r\\n or \\n', async (t) => {
  const darkice = Buffer.from(`${DARKICE}AUDIO`, 'latin1');
  const end = findHeadEnd(darkice);
  t.equal(darkice.subarray(end).toString(), 'AUDIO', 'the body starts after the empty line');
  const head = parseRequestHead(darkice.subarray(0, end).toString('latin1'));
  t.equal(head?.method, 'SOURCE');
  t.equal(head?.path, '/live');
  t.equal(head?.headers.get('content-type'), 'audio/mpeg');
  t.equal(head?.headers.get('ice-name'), 'darkice test', 'the last line before \\r\\n\\r\\n has no stray \\r');
  t.equal(checkCredentials(head?.headers.get('authorization'), 'hackme'), 'ok');
  t.equal(findHeadEnd(Buffer.from('PUT /a HTTP/1.1\n\nx')), 17);
  t.equal(findHeadEnd(Buffer.from('PUT /a HTTP/1.1\r\nHost: a\r\n')), -1, 'incomplete');
  t.equal(parseRequestHead('PUT /a HTTP/1.1\n\n')?.headers.size, 0);
  t.equal(parseRequestHead('GET / HTTP/2\r\n\r\n'), undefined);
});

void t.test('credentials: missing (the challenge) is told apart from wrong', async (t) => {
  const basic = (user: string, pass: string): string => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
  t.equal(checkCredentials(undefined, 'pw'), 'missing');
  t.equal(checkCredentials(basic('source', 'pw'), 'pw'), 'ok');
  t.equal(checkCredentials(basic('source', 'nope'), 'pw'), 'wrong');
  t.equal(checkCredentials('Bearer x', 'pw'), 'wrong');
});

void t.test('metadata updates as libshout, liquidsoap and ezstream send them', async (t) => {
  const head = parseRequestHead(LIBSHOUT_META);
  t.equal(head?.path, '/admin/metadata');
  const target = head?.target ?? '';
  t.same(parseMetadataQuery(target.slice(target.indexOf('?') + 1)), { mount: '/ez.mp3', title: 'Track A' });
  t.same(parseMetadataQuery('mode=updinfo&mount=/m&artist=A&title=B'), { mount: '/m', title: 'A - B' });
  t.same(parseMetadataQuery('mode=updinfo&mount=/m&song=Caf%E9'), { mount: '/m', title: 'Café' }, 'not UTF-8 and no charset: ISO-8859-1');
  t.same(parseMetadataQuery('mode=updinfo&mount=/m&song=Caf%C3%A9+au+lait'), { mount: '/m', title: 'Café au lait' });
  t.same(parseMetadataQuery('mode=updinfo&mount=/m&song=a%0Ab%1B[31m'), { mount: '/m', title: 'ab[31m' }, 'control characters dropped');
  t.same(parseMetadataQuery('mount=/m&song=x'), { refuse: 400, reason: 'Missing parameter: mode' });
  t.same(parseMetadataQuery('mode=stats&mount=/m&song=x'), { refuse: 400, reason: 'No such mode' });
  t.same(parseMetadataQuery('mode=updinfo&song=x'), { refuse: 400, reason: 'Missing parameter: mount' });
  t.same(parseMetadataQuery('mode=updinfo&mount=/m'), { refuse: 400, reason: 'Missing parameter: song' });
  t.equal([...cleanTitle('x'.repeat(2000))].length, 512, 'long titles are cut');
});

async function decode(framing: ReturnType<typeof bodyFraming>, pieces: string[]): Promise<{ out: string; complete: boolean }> {
  if ('refuse' in framing) throw new Error('refused');
  const body = new SourceBody(framing);
  let out = '';
  let complete = false;
  body.once('complete', () => {
    complete = true;
  });
  await pipeline(
    Readable.from(pieces.map((p) => Buffer.from(p, 'latin1'))),
    body,
    new Writable({
      write(chunk: Buffer, _e, cb) {
        out += chunk.toString('latin1');
        cb();
      },
    }),
  );
  return { out, complete };
}

void t.test('body framing: until close, Content-Length, chunked (split anywhere)', async (t) => {
  t.same(bodyFraming(new Map()), { kind: 'until-close' });
  t.same(bodyFraming(new Map([['content-length', '12']])), { kind: 'length', bytes: 12 });
  t.same(bodyFraming(new Map([['content-length', '-1']])), { refuse: 400, reason: 'Content-Length is not a number' });
  t.same(bodyFraming(new Map([['transfer-encoding', 'Chunked']])), { kind: 'chunked' });
  t.same(bodyFraming(new Map([['transfer-encoding', 'gzip, chunked']])), { refuse: 501, reason: 'transfer encoding gzip, chunked is not supported' });

  t.same(await decode({ kind: 'until-close' }, ['abc', 'def']), { out: 'abcdef', complete: false });
  t.same(await decode({ kind: 'length', bytes: 4 }, ['ab', 'cdef', 'gh']), { out: 'abcd', complete: true }, 'bytes after the body are not audio');
  const chunked = '5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nTrailer: x\r\n\r\nGARBAGE';
  t.same(await decode({ kind: 'chunked' }, [chunked]), { out: 'hello, world', complete: true });
  t.same(await decode({ kind: 'chunked' }, chunked.split('')), { out: 'hello, world', complete: true }, 'one byte at a time');
  t.same(await decode({ kind: 'chunked' }, ['A\r\n0123456789\r\n']), { out: '0123456789', complete: false }, 'no last chunk yet');
  await t.rejects(decode({ kind: 'chunked' }, ['zz\r\n']), /malformed chunk size/);
  await t.rejects(decode({ kind: 'chunked' }, ['2\r\nabX\r\n']), /does not end with CRLF/);
});

void t.test('titles inside Ogg: each chain\'s comment header (files written by oggenc)', async (t) => {
  const { execFileSync } = await import('node:child_process');
  const { readFileSync } = await import('node:fs');
  const path = await import('node:path');
  const { OggTitles } = await import('../../src/stations/ogg-titles.js');
  const dir = t.testdir();
  const make = (name: string, title: string, artist?: string): Buffer => {
    const wav = path.join(dir, `${name}.wav`);
    execFileSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'aevalsrc=0.1*sin(2*PI*440*t):s=48000:d=1', wav]);
    const ogg = path.join(dir, `${name}.ogg`);
    execFileSync('oggenc', ['-Q', '-t', title, ...(artist === undefined ? [] : ['-a', artist]), '-o', ogg, wav]);
    return readFileSync(ogg);
  };
  const chained = Buffer.concat([make('a', 'First'), make('b', 'Second', 'Band'), make('c', 'Caf\u00e9 \u266b')]);
  const titles: string[] = [];
  const reader = new OggTitles((title) => titles.push(title));
  for (let i = 0; i < chained.length; i += 777) reader.push(chained.subarray(i, i + 777));
  t.same(titles, ['First', 'Band - Second', 'Caf\u00e9 \u266b'], 'one title per chain, pages split anywhere');
  const mp3 = new OggTitles((title) => titles.push(title));
  mp3.push(Buffer.from('ID3\u0004\u0000 not ogg at all, and much more than 27 bytes long'));
  t.equal(titles.length, 3, 'not Ogg: nothing');
});
