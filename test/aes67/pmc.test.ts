import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { parsePmc, ptpStatusOf } from '../../src/aes67/pmc.js';

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/linuxptp-3.1.1');
const status = (file: string) => ptpStatusOf(parsePmc(readFileSync(path.join(fixtures, file), 'utf8')));
const GM = '1E-C2-9E-FF-FE-22-5E-6A';

void t.test('the grandmaster asked itself is locked: its own identity, domain 0, offset 0', async (t) => {
  const s = status('gm-master.txt');
  t.equal(s.state, 'locked');
  t.equal(s.grandmaster_id, GM);
  t.equal(s.clock_id, GM);
  t.equal(s.domain, 0);
  t.equal(s.offset_seconds, 0);
  t.same(s.port_states, ['MASTER']);
  t.equal(s.reason, undefined);
});

void t.test('a grandmaster still listening is not locked', async (t) => {
  const s = status('gm-listening.txt');
  t.equal(s.state, 'unlocked');
  t.same(s.port_states, ['LISTENING']);
  t.match(s.reason, /LISTENING/);
});

void t.test('a follower that found the grandmaster but did not lock: unlocked, grandmaster and offset known', async (t) => {
  const s = status('follower-uncalibrated.txt');
  t.equal(s.state, 'unlocked');
  t.equal(s.grandmaster_id, GM);
  t.not(s.clock_id, GM);
  t.equal(s.offset_seconds, 179e-9);
  t.same(s.port_states, ['UNCALIBRATED']);
});

void t.test('a follower that lost its grandmaster is unlocked, although ptp4l still names the old one', async (t) => {
  const s = status('follower-gm-lost.txt');
  t.equal(s.state, 'unlocked');
  t.equal(s.grandmaster_id, GM, 'stale identity kept by ptp4l');
  t.same(s.port_states, ['LISTENING']);
});

void t.test('no ptp4l: unavailable, nothing known', async (t) => {
  const s = status('no-ptp4l.txt');
  t.equal(s.state, 'unavailable');
  t.equal(s.grandmaster_id, null);
  t.equal(s.domain, null);
  t.equal(s.offset_seconds, null);
  t.same(ptpStatusOf(parsePmc(''), 'pmc not found').reason, 'pmc not found');
});

void t.test('the domain comes from DEFAULT_DATA_SET; asked in another domain, ptp4l does not answer', async (t) => {
  const s = status('gm-domain5.txt');
  t.equal(s.state, 'locked');
  t.equal(s.domain, 5);
  t.equal(status('gm-domain5-asked-in-0.txt').state, 'unavailable');
});

void t.test('a SLAVE port is locked (the state ptp4l reaches once its servo locks)', async (t) => {
  // The captured follower with its port state replaced: the capture cannot reach SLAVE without
  // steering this machine's clock (see the fixtures' README).
  const text = readFileSync(path.join(fixtures, 'follower-uncalibrated.txt'), 'utf8').replace('UNCALIBRATED', 'SLAVE');
  const s = ptpStatusOf(parsePmc(text));
  t.equal(s.state, 'locked');
  t.equal(s.grandmaster_id, GM);
  t.equal(s.offset_seconds, 179e-9);
});

void t.test('noise and unknown blocks are skipped', async (t) => {
  const parsed = parsePmc('sending: GET X\n\tabc.def seq 0 RESPONSE MANAGEMENT CURRENT_DATA_SET \n\t\tstepsRemoved 0\nrandom\n');
  t.equal(parsed.parent, undefined);
  t.same(parsed.ports, []);
});
