/**
 * The announcer's decisions with a recording SAP sender and a hand-moved clock: first
 * announcement at once, repeats at the jittered interval, a changed SDP withdrawn under its old
 * hash and announced under a new one, deletions for a stopped or deleted pipeline and at close.
 */
import pino from 'pino';
import t from 'tap';
import { Aes67Sessions, type StreamSource } from '../../src/aes67/sessions.js';
import { NO_PTP, type PtpStatus } from '../../src/aes67/pmc.js';
import { decodeSap, type SapMessage } from '../../src/aes67/sap.js';
import { checkConfig } from '../../src/config/load.js';
import { parsePipelineSpec } from '../../src/spec/validate.js';
import { EXAMPLE } from '../fixtures/example.js';

const LOCKED: PtpStatus = { state: 'locked', grandmaster_id: '1E-C2-9E-FF-FE-22-5E-6A', domain: 0, offset_seconds: 0, port_states: ['MASTER'], clock_id: '1E-C2-9E-FF-FE-22-5E-6A' };

const INTERFACES: Record<string, { name: string; address: string; mac: string } | undefined> = {
  veth0: { name: 'veth0', address: '10.0.0.2', mac: '92:8a:8b:50:c0:93' },
  veth1: { name: 'veth1', address: '10.1.0.2', mac: '92:8a:8b:50:c0:94' },
};

function setup(streams: StreamSource[], config: Record<string, unknown> = {}) {
  let now = 1_700_000_000_000;
  let ptp = LOCKED;
  const sent: (SapMessage & { from: string })[] = [];
  let opened = 0;
  const sessions = new Aes67Sessions({
    config: checkConfig({ aes67: { interface: 'veth0', ...config } }, 'c.toml').aes67,
    streams: () => streams,
    ptp: () => ptp,
    findInterface: (name) => INTERFACES[name],
    openSender: async (address) => {
      opened += 1;
      return { send: async (packet) => void sent.push({ ...decodeSap(packet), from: address }), close: async () => undefined };
    },
    log: pino({ level: 'silent' }),
    now: () => now,
    random: () => 0.5,
    tickMs: 500,
  });
  return {
    sessions,
    sent,
    opened: () => opened,
    advance: (ms: number) => (now += ms),
    setPtp: (status: PtpStatus) => (ptp = status),
  };
}

const stream = (id: string, host: string, live = true): StreamSource => ({
  id,
  name: id,
  output: parsePipelineSpec({ ...EXAMPLE, output: { type: 'rtp', host, port: 5004 } }).output,
  live,
});

void t.test('announce at once, then every interval (jittered), only multicast IPv4 and live', async (t) => {
  const streams = [stream('pl_a', '239.69.1.1'), stream('pl_uni', '10.0.0.9'), stream('pl_v6', 'ff02::1'), stream('pl_off', '239.69.1.2', false)];
  const s = setup(streams);
  await s.sessions.refresh();
  t.same(s.sent.map((m) => [m.type, m.origin]), [['announce', '10.0.0.2']]);
  t.match(s.sent[0]?.payload, /a=ts-refclk:ptp=IEEE1588-2008:1E-C2-9E-FF-FE-22-5E-6A:0\r\n/);
  s.advance(29_000);
  await s.sessions.refresh();
  t.equal(s.sent.length, 1, 'not before 30 s (random 0.5: exactly the base interval)');
  s.advance(1_000);
  await s.sessions.refresh();
  t.equal(s.sent.length, 2);
  t.equal(s.sent[1]?.hash, s.sent[0]?.hash, 'same SDP, same hash');
  t.equal(s.sent[1]?.payload, s.sent[0]?.payload, 'same version');
  t.equal(s.opened(), 1, 'one socket');
  t.same(s.sessions.list().map((v) => [v.pipeline_id, v.announcements]), [['pl_a', 2]]);
});

void t.test('a changed SDP: deletion under the old hash, announcement under a new one, a higher version', async (t) => {
  const s = setup([stream('pl_a', '239.69.1.1')]);
  await s.sessions.refresh();
  const first = s.sent[0];
  s.setPtp(NO_PTP);
  s.advance(500);
  await s.sessions.refresh();
  t.same(s.sent.slice(1).map((m) => m.type), ['delete', 'announce']);
  t.equal(s.sent[1]?.hash, first?.hash);
  t.match(s.sent[1]?.payload, /^o=- \d+ \d+ IN IP4 10\.0\.0\.2\r\n$/);
  t.not(s.sent[2]?.hash, first?.hash);
  t.match(s.sent[2]?.payload, /a=ts-refclk:localmac=92-8A-8B-50-C0-93\r\n/);
  const version = (m: SapMessage | undefined) => Number(/^o=- \d+ (\d+)/m.exec(m?.payload ?? '')?.[1]);
  t.ok(version(s.sent[2]) > version(first));
});

void t.test('traceable when configured and unlocked', async (t) => {
  const s = setup([stream('pl_a', '239.69.1.1')], { ptp_traceable: true });
  s.setPtp(NO_PTP);
  await s.sessions.refresh();
  t.match(s.sent[0]?.payload, /a=ts-refclk:ptp=IEEE1588-2008:traceable\r\n/);
});

void t.test('stopped or deleted: a deletion; close: deletions for the rest; SAP off: nothing', async (t) => {
  const streams = [stream('pl_a', '239.69.1.1'), stream('pl_b', '239.69.1.2')];
  const s = setup(streams);
  await s.sessions.refresh();
  const hashes = new Map(s.sent.map((m) => [m.payload.includes('239.69.1.1') ? 'a' : 'b', m.hash]));
  streams[1] = { ...streams[1]!, live: false };
  await s.sessions.refresh();
  t.same(s.sent.at(-1), { ...s.sent.at(-1), type: 'delete', hash: hashes.get('b') });
  streams.splice(1, 1);
  await s.sessions.close();
  t.same(s.sent.at(-1), { ...s.sent.at(-1), type: 'delete', hash: hashes.get('a') });
  t.equal(s.sent.length, 4);
  t.same(s.sessions.list(), []);

  const off = setup([stream('pl_a', '239.69.1.1')], { sap: false });
  off.sessions.start();
  await off.sessions.refresh();
  await off.sessions.close();
  t.same(off.sent, []);
  t.match(off.sessions.sdp(stream('pl_a', '239.69.1.1')), /^v=0\r\n/, 'the SDP is still there');
});

void t.test('no IPv4 on the configured interface: SAP waits, the SDP names 127.0.0.1', async (t) => {
  const s = setup([stream('pl_a', '239.69.1.1')], { interface: 'eth9' });
  await s.sessions.refresh();
  t.same(s.sent, []);
  t.match(s.sessions.sdp(stream('pl_a', '239.69.1.1')), /^o=- \d+ \d+ IN IP4 127\.0\.0\.1\r\n/m);
});

void t.test('an ST 2022-7 output is announced on both networks: the two-leg SDP from each interface', async (t) => {
  const output = parsePipelineSpec({ ...EXAMPLE, output: { type: 'rtp', host: '239.69.1.1', port: 5004, redundant: { host: '239.69.2.1', interface: 'veth1' } } }).output;
  const s = setup([{ id: 'pl_dup', name: 'Dup', output, live: true }]);
  await s.sessions.refresh();
  t.same(s.sent.map((m) => [m.type, m.origin, m.from]), [['announce', '10.0.0.2', '10.0.0.2'], ['announce', '10.1.0.2', '10.1.0.2']], 'one per network, each from and naming its own address');
  t.equal(s.sent[0]?.payload, s.sent[1]?.payload, 'the same SDP');
  t.equal(s.sent[0]?.hash, s.sent[1]?.hash, 'the same hash');
  t.match(s.sent[0]?.payload, /a=group:DUP primary secondary\r\n/);
  t.match(s.sent[0]?.payload, /a=source-filter: incl IN IP4 239\.69\.2\.1 10\.1\.0\.2\r\n/);
  t.same(s.sessions.list().map((v) => [v.origin, v.redundant_origin]), [['10.0.0.2', '10.1.0.2']]);
  t.equal(s.opened(), 2, 'a socket per network');
  s.advance(30_000);
  await s.sessions.refresh();
  t.equal(s.sent.length, 4, 'repeated on both');
  await s.sessions.close();
  t.same(s.sent.slice(4).map((m) => [m.type, m.from]), [['delete', '10.0.0.2'], ['delete', '10.1.0.2']], 'deleted on both');
});

void t.test('a redundant leg on the main interface, unicast or without an interface: announced once', async (t) => {
  const outputs = [
    { host: '239.69.2.1', interface: 'veth0' },
    { host: '10.1.0.9', interface: 'veth1' },
    { host: '239.69.2.1' },
    { host: '239.69.2.1', interface: 'nosuch' },
  ].map((redundant, i) => ({ id: `pl_${i}`, name: `n${i}`, output: parsePipelineSpec({ ...EXAMPLE, output: { type: 'rtp', host: '239.69.1.1', port: 5004, interface: 'veth1', redundant } }).output, live: true }));
  const s = setup(outputs);
  await s.sessions.refresh();
  t.same(s.sent.map((m) => m.from), ['10.0.0.2', '10.0.0.2', '10.0.0.2', '10.0.0.2']);
  t.same(s.sessions.list().map((v) => v.redundant_origin), [null, null, null, null]);
});

void t.test("a leg's link down (its interface not listed): the SDP and the session stay", async (t) => {
  const output = parsePipelineSpec({ ...EXAMPLE, output: { type: 'rtp', host: '239.69.1.1', port: 5004, redundant: { host: '239.69.2.1', interface: 'veth1' } } }).output;
  const s = setup([{ id: 'pl_dup', name: 'Dup', output, live: true }]);
  await s.sessions.refresh();
  const saved = INTERFACES.veth1;
  t.teardown(() => void (INTERFACES.veth1 = saved));
  INTERFACES.veth1 = undefined;
  s.advance(30_000);
  await s.sessions.refresh();
  t.same(s.sent.map((m) => [m.type, m.from]), [['announce', '10.0.0.2'], ['announce', '10.1.0.2'], ['announce', '10.0.0.2'], ['announce', '10.1.0.2']], 'no deletion, the same networks');
  t.equal(new Set(s.sent.map((m) => m.payload)).size, 1, 'the same SDP');
});
