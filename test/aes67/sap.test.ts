import t from 'tap';
import { announcement, decodeSap, deletion, encodeSap, jitteredInterval, messageIdHash, originLine } from '../../src/aes67/sap.js';

const SDP = 'v=0\r\no=- 123 1700000000 IN IP4 10.0.0.2\r\ns=Morning\r\nc=IN IP4 239.69.1.1/16\r\nt=0 0\r\n';

void t.test('announcement: RFC 2974 header, application/sdp, the whole SDP', async (t) => {
  const hash = messageIdHash(SDP);
  const packet = announcement(SDP, hash, '10.0.0.2');
  t.equal(packet[0], 0x20, 'V=1, IPv4, announce');
  t.equal(packet[1], 0, 'no authentication data');
  t.equal(packet.readUInt16BE(2), hash);
  t.same([...packet.subarray(4, 8)], [10, 0, 0, 2], 'origin');
  t.equal(packet.subarray(8, 24).toString('ascii'), 'application/sdp\0');
  t.equal(packet.subarray(24).toString('utf8'), SDP);
  t.same(decodeSap(packet), { type: 'announce', hash, origin: '10.0.0.2', payloadType: 'application/sdp', payload: SDP });
});

void t.test('deletion: T bit set, the o= line under the announcement hash', async (t) => {
  const packet = deletion(SDP, 4242, '10.0.0.2');
  t.equal(packet[0], 0x24);
  const message = decodeSap(packet);
  t.equal(message.type, 'delete');
  t.equal(message.hash, 4242);
  t.equal(message.payload, 'o=- 123 1700000000 IN IP4 10.0.0.2\r\n');
  t.equal(originLine(SDP.replace(/\r\n/g, '\n')), 'o=- 123 1700000000 IN IP4 10.0.0.2\n');
});

void t.test('hash: 16 bits, never 0, changes with the SDP', async (t) => {
  const a = messageIdHash(SDP);
  const b = messageIdHash(SDP.replace('Morning', 'Evening'));
  t.ok(a >= 1 && a <= 0xffff);
  t.not(a, b);
  t.equal(messageIdHash(SDP), a, 'stable');
});

void t.test('refusals and a packet without payload type', async (t) => {
  t.throws(() => encodeSap({ type: 'announce', hash: 0, origin: '10.0.0.2', payload: SDP }), /1-65535/);
  t.throws(() => encodeSap({ type: 'announce', hash: 1, origin: '::1', payload: SDP }), /IPv4/);
  t.throws(() => decodeSap(Buffer.from([0x20, 0])), /too short/);
  t.throws(() => decodeSap(Buffer.from([0x40, 0, 0, 1, 1, 2, 3, 4])), /version/);
  const bare = Buffer.concat([Buffer.from([0x20, 0, 0, 7, 1, 2, 3, 4]), Buffer.from(SDP)]);
  t.same(decodeSap(bare), { type: 'announce', hash: 7, origin: '1.2.3.4', payloadType: 'application/sdp', payload: SDP });
});

void t.test('jitter: 2/3 to 4/3 of the base interval', async (t) => {
  t.equal(jitteredInterval(30_000, () => 0), 20_000);
  t.equal(jitteredInterval(30_000, () => 1), 40_000);
  t.equal(jitteredInterval(30_000, () => 0.5), 30_000);
});
