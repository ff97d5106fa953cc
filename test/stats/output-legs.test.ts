import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { parseLine, type UdpSendWarningEvent } from '../../src/stats/parse-line.js';
import { OutputLegs, SendWarningLines } from '../../src/stats/output-legs.js';

const FIXTURE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/gst-launch-1.22/udpsink-leg-down.stdout');
const lines = readFileSync(FIXTURE, 'utf8').split('\n').filter((l) => l !== '');

const warning = (element = 'out2'): UdpSendWarningEvent => ({ kind: 'udp-send-warning', element, client: '239.69.2.1:5004', reason: 'Error sending message: Network is unreachable' });

void t.test("udpsink's send warnings in real gst-launch output parse to events; nothing else does", async (t) => {
  const events = lines.map(parseLine).filter((e) => e !== undefined);
  t.equal(events.length, 3, 'the three warnings of the capture');
  for (const event of events) t.same(event, warning());
  t.equal(parseLine('Got message #9 from element "out2" (warning): GstMessageWarning, gerror=(GError)NULL, debug=(string)"some\\ other\\ warning";'), undefined, 'another warning of a sink');
  t.equal(parseLine('Got message #9 from element "out2" (warning): garbage'), undefined);
});

void t.test('the text lines of a send warning are dropped, everything else kept', async (t) => {
  const filter = new SendWarningLines();
  const kept = lines.filter((l) => !l.startsWith('Got message') && !filter.swallow(l));
  t.notOk(kept.some((l) => /WARNING|Additional debug info|gstmultiudpsink|^client /.test(l)), kept.join('\n'));
  t.ok(kept.includes('Setting pipeline to PLAYING ...'));
  // a warning's text cut short: the next unrelated line is kept
  const cut = new SendWarningLines();
  t.ok(cut.swallow('WARNING: from element /GstPipeline:pipeline0/GstUDPSink:out2: Error sending UDP packets'));
  t.notOk(cut.swallow('Setting pipeline to NULL ...'));
  t.notOk(cut.swallow('Additional debug info:'), 'no warning before it: kept');
  t.notOk(new SendWarningLines().swallow('WARNING: from element /GstPipeline:pipeline0/GstTsDemux:demux: Delayed linking failed.'), "another element's warning is kept");
});

void t.test('a leg fails at its first warning and sends again after a whole report interval without one', async (t) => {
  const legs = new OutputLegs();
  t.same(legs.status('out2'), { state: 'sending', error: null }, 'a new child sends');
  t.same(legs.onReport(100), []);
  t.same(legs.onWarning(warning()), { sink: 'out2', state: 'failed', client: '239.69.2.1:5004', error: 'Error sending message: Network is unreachable' });
  t.equal(legs.onWarning(warning()), undefined, 'already failed: no change');
  t.same(legs.status('out2'), { state: 'failed', error: 'Error sending message: Network is unreachable' });
  t.same(legs.status('out'), { state: 'sending', error: null }, 'the other leg is not touched');
  t.same(legs.onReport(1100), [], 'the interval held a warning');
  legs.onWarning(warning());
  t.same(legs.onReport(2100), [], 'still failing');
  t.same(legs.onReport(3100), [{ sink: 'out2', state: 'sending' }], 'a whole interval without a warning, packets flowed');
  t.same(legs.status('out2'), { state: 'sending', error: null });
});

void t.test('no packets in the interval: no evidence the leg sends again', async (t) => {
  const legs = new OutputLegs();
  legs.onReport(100);
  legs.onWarning(warning());
  legs.onReport(200);
  t.same(legs.onReport(200), [], 'no packets flowed');
  t.same(legs.onReport(undefined), [], 'no count at all');
  t.same(legs.onReport(300), [{ sink: 'out2', state: 'sending' }]);
});

void t.test('a new child starts with every leg sending', async (t) => {
  const legs = new OutputLegs();
  legs.onWarning(warning('out'));
  t.equal(legs.status('out').state, 'failed');
  legs.childStarted();
  t.equal(legs.status('out').state, 'sending');
});

void t.test('link rule: a leg whose interface has no carrier fails at once and sends again when the carrier is back', async (t) => {
  const legs = new OutputLegs();
  t.equal(legs.onLink('out2', 'eth1', null), undefined, 'a link that carries: no change');
  t.same(legs.onLink('out2', 'eth1', 'no carrier on eth1'), { sink: 'out2', state: 'failed', error: 'no carrier on eth1', interface: 'eth1' });
  t.same(legs.status('out2'), { state: 'failed', error: 'no carrier on eth1' });
  t.same(legs.status('out'), { state: 'sending', error: null }, 'the other leg is not touched');
  t.same(legs.onReport(100), [], 'reports do not clear the link rule');
  t.same(legs.onReport(200), []);
  t.equal(legs.status('out2').state, 'failed');
  t.equal(legs.onLink('out2', 'eth1', 'eth1 is down'), undefined, 'another cause while failed: no change');
  t.same(legs.status('out2'), { state: 'failed', error: 'eth1 is down' }, 'the current cause');
  t.same(legs.onLink('out2', 'eth1', null), { sink: 'out2', state: 'sending' }, 'the carrier back: at once');
  t.same(legs.status('out2'), { state: 'sending', error: null });
});

void t.test('merged: a leg is failed while either rule says so, and recovers when both have cleared', async (t) => {
  // the link fails first, then sends fail too; the link comes back before the sends
  const legs = new OutputLegs();
  legs.onReport(100);
  t.equal(legs.onLink('out2', 'eth1', 'eth1 is down')?.state, 'failed');
  t.equal(legs.onWarning(warning()), undefined, 'already failed by the link: no second change');
  t.same(legs.status('out2'), { state: 'failed', error: 'eth1 is down; Error sending message: Network is unreachable' }, 'both causes');
  t.equal(legs.onLink('out2', 'eth1', null), undefined, 'the link back, the sends still failing: still failed');
  t.same(legs.status('out2'), { state: 'failed', error: 'Error sending message: Network is unreachable' });
  t.same(legs.onReport(200), []);
  t.same(legs.onReport(300), [{ sink: 'out2', state: 'sending' }], 'a whole interval without a warning: both rules clear');

  // the sends fail first, then the link; the sends clear while the link is still down
  const other = new OutputLegs();
  other.onReport(100);
  t.equal(other.onWarning(warning())?.state, 'failed');
  t.equal(other.onLink('out2', 'eth1', 'no carrier on eth1'), undefined, 'already failed by its sends');
  other.onReport(200);
  t.same(other.onReport(300), [], 'the sends rule cleared, the link has no carrier: no recovery');
  t.same(other.status('out2'), { state: 'failed', error: 'no carrier on eth1' });
  t.same(other.onLink('out2', 'eth1', null), { sink: 'out2', state: 'sending' }, 'the carrier back: sending');
});

void t.test('a new child forgets both rules (its watch of the links tells them again)', async (t) => {
  const legs = new OutputLegs();
  legs.onLink('out2', 'eth1', 'no carrier on eth1');
  legs.childStarted();
  t.same(legs.status('out2'), { state: 'sending', error: null });
  t.same(legs.onLink('out2', 'eth1', 'no carrier on eth1'), { sink: 'out2', state: 'failed', error: 'no carrier on eth1', interface: 'eth1' });
});
