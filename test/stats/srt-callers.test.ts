import t from 'tap';
import type { SrtAccessEvent } from '../../src/stats/parse-line.js';
import { rejectionCause, SrtCallerLog } from '../../src/stats/srt-callers.js';

const rejected = (peer: string | undefined, rejectCode: number, passphrase: boolean, reason = 'libsrt text', busy = false): SrtAccessEvent => ({
  kind: 'srtaccess', element: 'access', event: 'rejected', ...(peer === undefined ? {} : { peer }), rejectCode, reason, passphrase, busy,
});

void t.test('causes in words', async (t) => {
  t.equal(rejectionCause(rejected('1.2.3.4:5', 1010, true) as Extract<SrtAccessEvent, { event: 'rejected' }>), 'wrong passphrase');
  t.equal(rejectionCause(rejected('1.2.3.4:5', 1011, true) as Extract<SrtAccessEvent, { event: 'rejected' }>), 'the caller sent no passphrase');
  t.equal(rejectionCause(rejected('1.2.3.4:5', 1011, false) as Extract<SrtAccessEvent, { event: 'rejected' }>), 'the caller sent a passphrase, this input has none');
  t.equal(rejectionCause(rejected('1.2.3.4:5', 1003, true, 'Peer rejected connection') as Extract<SrtAccessEvent, { event: 'rejected' }>), 'refused by libsrt: Peer rejected connection');
  t.equal(rejectionCause(rejected('1.2.3.4:5', 1099, true, '') as Extract<SrtAccessEvent, { event: 'rejected' }>), 'refused by libsrt: reject code 1099');
  t.equal(rejectionCause(rejected('1.2.3.4:5', 1000, false, 'Unknown or erroneous', true) as Extract<SrtAccessEvent, { event: 'rejected' }>), 'the connected caller is delivering');
});

void t.test('each refusal is logged with its cause; one caller retrying is told once per 10 s, with the count', async (t) => {
  const log = new SrtCallerLog(10_000);
  const first = log.report(rejected('127.0.0.1:40000', 1010, true, 'Incorrect passphrase'), 0);
  t.match(first, {
    level: 'warn',
    fields: { event: 'srt-caller-rejected', peer: '127.0.0.1:40000', cause: 'wrong passphrase', reject_code: 1010, srt_reason: 'Incorrect passphrase', repeated: 0 },
    text: 'SRT caller 127.0.0.1:40000 refused: wrong passphrase',
  });
  t.equal(log.report(rejected('127.0.0.1:40001', 1010, true), 1000), undefined, 'same host and cause, new port: held back');
  t.equal(log.report(rejected('127.0.0.1:40002', 1010, true), 2000), undefined);
  t.ok(log.report(rejected('127.0.0.1:40003', 1011, true), 2500), 'another cause is told at once');
  t.ok(log.report(rejected('10.0.0.9:40003', 1010, true), 2600), 'another host is told at once');
  const later = log.report(rejected('127.0.0.1:40004', 1010, true), 10_000);
  t.match(later, { fields: { repeated: 2 }, text: 'SRT caller 127.0.0.1:40004 refused: wrong passphrase (2 more refused since the last report)' });
  t.match(log.report(rejected(undefined, 1010, true), 10_001), { fields: { peer: 'unknown address' } }, 'no address: told as unknown');
  t.match(log.report({ kind: 'srtaccess', element: 'access', event: 'accepted', peer: '127.0.0.1:40005', replaced: false }, 10_002), {
    level: 'info', fields: { event: 'srt-caller-accepted', peer: '127.0.0.1:40005' }, text: 'SRT caller 127.0.0.1:40005 connected',
  });
  t.match(log.report({ kind: 'srtaccess', element: 'access', event: 'accepted', peer: '127.0.0.1:40006', replaced: true }, 10_003), {
    level: 'info', fields: { event: 'srt-caller-accepted', peer: '127.0.0.1:40006', replaced: true },
    text: 'SRT caller 127.0.0.1:40006 connected in place of a connection that had gone quiet',
  });
  t.match(log.report(rejected('127.0.0.1:40007', 1000, false, 'Unknown or erroneous', true), 10_004), {
    level: 'warn', fields: { event: 'srt-caller-rejected', cause: 'the connected caller is delivering', busy: true },
  });
});

void t.test('many callers: the table stays bounded', async (t) => {
  const log = new SrtCallerLog(10_000);
  for (let i = 0; i < 2000; i++) t.ok(log.report(rejected(`10.0.${Math.floor(i / 250)}.${i % 250}:1`, 1010, true), i), `caller ${i}`);
});
