import t from 'tap';
import { eui64ForSdp, sanitiseName, SdpVersion, sessionIdOf, writeSdp, type SdpStream } from '../../src/aes67/sdp.js';

const stream: SdpStream = {
  sessionId: sessionIdOf('pl_abcdefghijkl'),
  version: 1700000000,
  origin: '10.67.0.2',
  name: 'Morning Show',
  destination: '239.69.1.1',
  ttl: 16,
  port: 5004,
  payloadType: 96,
  encoding: 'L24',
  channels: 2,
  ptime: 1,
  refclk: { kind: 'ptp', grandmaster: '1E-C2-9E-FF-FE-22-5E-6A', domain: 0 },
};

void t.test('the lines in the AES67 order, CRLF throughout', async (t) => {
  const sdp = writeSdp(stream);
  t.equal(
    sdp,
    [
      'v=0',
      `o=- ${stream.sessionId} 1700000000 IN IP4 10.67.0.2`,
      's=Morning Show',
      't=0 0',
      'm=audio 5004 RTP/AVP 96',
      'i=2 channels: L, R',
      'c=IN IP4 239.69.1.1/16',
      'a=recvonly',
      'a=rtpmap:96 L24/48000/2',
      'a=fmtp:96 channel-order=SMPTE2110.(ST)',
      'a=ptime:1',
      'a=framecount:48',
      'a=ts-refclk:ptp=IEEE1588-2008:1E-C2-9E-FF-FE-22-5E-6A:0',
      'a=mediaclk:direct=0',
      'a=source-filter: incl IN IP4 239.69.1.1 10.67.0.2',
      '',
    ].join('\r\n'),
  );
  t.notMatch(sdp.replace(/\r\n/g, ''), /[\r\n]/, 'no bare LF or CR');
  t.notMatch(writeSdp(stream, '\n'), /\r/, 'LF mode has no CR');
});

void t.test('unicast has no TTL; L16, mono, 0.333 ms and the other reference clocks', async (t) => {
  const sdp = writeSdp({ ...stream, destination: '10.0.0.9', ttl: undefined, encoding: 'L16', channels: 1, ptime: 0.333, payloadType: 100, refclk: { kind: 'localmac', mac: '92:8a:8b:50:c0:93' } }, '\n');
  t.match(sdp, /^c=IN IP4 10\.0\.0\.9$/m);
  t.match(sdp, /^m=audio 5004 RTP\/AVP 100$/m);
  t.match(sdp, /^i=1 channels: M$/m);
  t.match(sdp, /^a=rtpmap:100 L16\/48000\/1$/m);
  t.match(sdp, /^a=ptime:0\.333$/m);
  t.match(sdp, /^a=framecount:16$/m);
  t.match(sdp, /^a=ts-refclk:localmac=92-8A-8B-50-C0-93$/m);
  t.notMatch(sdp, /source-filter/, 'unicast: no source filter');
  t.match(writeSdp({ ...stream, channels: 8, refclk: { kind: 'ptp-traceable' } }), /i=8 channels: 1, 2, 3, 4, 5, 6, 7, 8\r\n[\s\S]*a=ts-refclk:ptp=IEEE1588-2008:traceable\r\n/);
});

void t.test('name sanitised: no control characters, ASCII, bounded, never empty', async (t) => {
  t.equal(sanitiseName('Morning   Show'), 'Morning Show');
  t.equal(sanitiseName('Café Müller'), 'Cafe Muller');
  t.equal(sanitiseName('a\r\nm=video 1 RTP/AVP 96'), 'a m=video 1 RTP/AVP 96');
  t.equal(sanitiseName('Радио'), '_____');
  t.equal(sanitiseName('   '), '-');
  t.equal(sanitiseName('x'.repeat(200)).length, 64);
  t.notMatch(writeSdp({ ...stream, name: 'evil\r\na=sendonly' }), /^a=sendonly/m);
});

void t.test('session id stable per pipeline; version grows on every change, never back', async (t) => {
  t.equal(sessionIdOf('pl_a'), sessionIdOf('pl_a'));
  t.not(sessionIdOf('pl_a'), sessionIdOf('pl_b'));
  t.match(sessionIdOf('pl_a'), /^\d{1,15}$/);
  const v = new SdpVersion();
  const first = v.of('body1', 1_700_000_000_500);
  t.equal(first, 1_700_000_000);
  t.equal(v.of('body1', 1_700_000_100_000), first, 'same body, same version');
  t.equal(v.of('body2', 1_700_000_000_900), first + 1, 'changed within the same second: +1');
  t.equal(v.of('body3', 1_700_000_500_000), 1_700_000_500, 'later change: the time');
  t.equal(v.of('body1', 1_600_000_000_000), 1_700_000_501, 'clock went back: still grows');
});

void t.test('clock identities', async (t) => {
  t.equal(eui64ForSdp('1ec29e.fffe.225e6a'), '1E-C2-9E-FF-FE-22-5E-6A');
  t.throws(() => eui64ForSdp('nope'));
});

void t.test('ST 2022-7: each media section names its own leg\'s interface in ts-refclk localmac', async (t) => {
  const sdp = writeSdp({
    ...stream,
    refclk: { kind: 'localmac', mac: '02:00:00:00:00:01' },
    redundant: { destination: '239.69.2.1', ttl: 16, port: 5004, origin: '10.68.0.2', refclk: { kind: 'localmac', mac: '02:00:00:00:00:02' } },
  });
  const [, primary, secondary] = sdp.split(/\r\nm=audio /);
  t.match(primary, /a=ts-refclk:localmac=02-00-00-00-00-01\r\n/, 'the first leg: its interface');
  t.notMatch(primary, /localmac=02-00-00-00-00-02/);
  t.match(secondary, /a=ts-refclk:localmac=02-00-00-00-00-02\r\n/, 'the second leg: its own interface');
  t.match(secondary, /a=source-filter: incl IN IP4 239\.69\.2\.1 10\.68\.0\.2\r\n/);
});
