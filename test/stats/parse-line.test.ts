import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { parseStructure } from '../../src/stats/gst-structure.js';
import { parseLine, type StatsEvent } from '../../src/stats/parse-line.js';

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/gst-launch-1.22');
const ROOT = path.resolve(fixtures, '../../..');

void t.test('level messages of a real run', async (t) => {
  const lines = readFileSync(path.join(fixtures, 'level.stdout'), 'utf8').split('\n');
  const events = lines.map(parseLine).filter((e): e is StatsEvent => e !== undefined);
  t.equal(events.length, 24, 'one event per level message, nothing from the other lines');
  const first = events[0];
  t.equal(first?.kind, 'level');
  if (first?.kind !== 'level') return;
  t.equal(first.element, 'level0');
  t.equal(first.rmsDb.length, 2);
  t.ok(Math.abs((first.rmsDb[0] ?? 0) - -4.9489804397817929) < 1e-12, 'audiotestsrc default sine at 0.8: -4.95 dBFS RMS');
  t.ok(Math.abs((first.peakDb[1] ?? 0) - -1.9386641491007353) < 1e-12);
});

void t.test('loudnorm messages as documented (captured lines in docs/elements-loudnorm.md)', async (t) => {
  const doc = readFileSync(path.join(ROOT, 'docs', 'elements-loudnorm.md'), 'utf8');
  const lines = doc.split('\n').filter((l) => l.startsWith('Got message #') && l.includes('(element): loudnorm,'));
  t.ok(lines.length >= 1, 'the doc carries real lines');
  for (const line of lines) {
    const event = parseLine(line);
    t.equal(event?.kind, 'loudnorm', line.slice(0, 60));
    if (event?.kind !== 'loudnorm') continue;
    for (const value of Object.values(event)) if (typeof value === 'number') t.ok(Number.isFinite(value));
    t.ok(event.outputIntegrated > -30 && event.outputIntegrated < -15);
  }
});

void t.test('pipelinestats messages: the documented lines, and older output whose buffer-* fields are ignored', async (t) => {
  const doc = readFileSync(path.join(ROOT, 'docs', 'elements-pipelinestats.md'), 'utf8');
  const documented = doc.split('\n').filter((l) => l.startsWith('Got message #') && l.includes('(element): pipelinestats,'));
  t.equal(documented.length, 2, 'the doc carries two real lines');
  t.ok(documented.every((l) => !l.includes('buffer-')), 'the element posts no buffer-* field');
  // Captured while the element still read a queue: buffer-level-time, buffer-max-time, buffer-fill.
  const older = readFileSync(path.join(fixtures, 'pipelinestats-srt.stdout'), 'utf8').split('\n')
    .filter((l) => l.includes('(element): pipelinestats,'));
  t.ok(older.length >= 5 && older.every((l) => l.includes('buffer-fill=')), `${older.length} fixture lines with buffer-* fields`);
  for (const line of [...documented, ...older]) {
    const event = parseLine(line);
    if (event?.kind !== 'pipelinestats') {
      t.fail(`not a pipelinestats event: ${line.slice(0, 80)}`);
      continue;
    }
    t.same(Object.keys(event).sort(), ['element', 'kind', 'output', 'runningTimeNs', 'srt'], 'srt, output and running time; nothing of a buffer');
    t.equal(event.element, 'stats');
  }
  const sending = parseLine(documented[1] ?? '');
  t.ok(sending?.kind === 'pipelinestats' && sending.srt?.connected === true && sending.srt.packetsReceived > 0 && (sending.output?.packets ?? 0) > 0, 'the second documented line: a caller sending');
});

void t.test('structures: strings, escapes, arrays, booleans', async (t) => {
  const s = parseStructure('x, a=(string)"he said \\"hi\\", ok", b=(boolean)true, c=(GValueArray)< -1.5, -inf >, d=(guint64)18446744073709551615, e=(string)bare\\ word, f=(int){ 1, 2 };');
  t.ok(s);
  t.equal(s?.fields.get('a'), 'he said "hi", ok');
  t.equal(s?.fields.get('b'), true);
  t.same(s?.fields.get('c'), [-1.5, Number.NEGATIVE_INFINITY]);
  t.equal(s?.fields.get('d'), 2 ** 64, 'guint64 max, as the nearest double');
  t.equal(s?.fields.get('e'), 'bare word');
  t.same(s?.fields.get('f'), [1, 2]);
  t.equal(parseStructure('bad name, a=(int)1'), undefined);
  t.equal(parseStructure('x, a=(int)"unterminated'), undefined);
  t.same([...(parseStructure('only-a-name;')?.fields ?? [])], []);
});

void t.test('never throws on garbage, truncation or interleaved stderr', async (t) => {
  const real = readFileSync(path.join(fixtures, 'level.stdout'), 'utf8').split('\n');
  const doc = readFileSync(path.join(ROOT, 'docs', 'elements-loudnorm.md'), 'utf8').split('\n').filter((l) => l.startsWith('Got message #'));
  const corpus = [...real, ...doc];
  let seed = 12345;
  const random = (): number => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
  let parsed = 0;
  for (let i = 0; i < 20000; i++) {
    const base = corpus[Math.floor(random() * corpus.length)] ?? '';
    let line: string;
    switch (i % 4) {
      case 0: line = base.slice(0, Math.floor(random() * base.length)); break; // truncated
      case 1: { // a byte changed
        const at = Math.floor(random() * base.length);
        line = base.slice(0, at) + String.fromCharCode(Math.floor(random() * 128)) + base.slice(at + 1);
        break;
      }
      case 2: line = Array.from({ length: Math.floor(random() * 200) }, () => String.fromCharCode(Math.floor(random() * 256))).join(''); break;
      default: line = base.slice(0, Math.floor(random() * base.length)) + 'ERROR: from element /GstPipeline:pipeline0: x' ; // interleaved
    }
    if (parseLine(line) !== undefined) parsed++;
  }
  t.pass(`20000 mangled lines, none threw (${parsed} still parsed)`);
  t.equal(parseLine(''), undefined);
  t.equal(parseLine('Got message #1 from element "x" (element): level, rms=(GValueArray)< 1, '), undefined, 'a partial line');
  t.equal(parseLine('Got message #1 from element "x" (element): unknownthing, a=(int)1;'), undefined, 'an unknown message');
});

void t.test('srtaccess messages of a real run: refused and accepted callers (docs/elements-srtaccess.md)', async (t) => {
  const lines = readFileSync(path.join(fixtures, 'srtaccess-callers.stdout'), 'utf8').split('\n');
  const events = lines.map(parseLine).filter((e): e is StatsEvent => e?.kind === 'srtaccess');
  t.equal(events.length, 3, 'no passphrase, wrong passphrase, then the right one');
  t.match(events[0], { kind: 'srtaccess', element: 'access', event: 'rejected', peer: /^127\.0\.0\.1:\d+$/, rejectCode: 1011, reason: 'Password required or unexpected', passphrase: true });
  t.match(events[1], { event: 'rejected', rejectCode: 1010, reason: 'Incorrect passphrase', passphrase: true });
  t.match(events[2], { event: 'accepted', peer: /^127\.0\.0\.1:\d+$/ });
  t.notOk('rejectCode' in (events[2] ?? {}));
  const doc = readFileSync(path.join(ROOT, 'docs', 'elements-srtaccess.md'), 'utf8');
  const documented = doc.split('\n').filter((l) => l.startsWith('Got message #') && l.includes('(element): srtaccess,'));
  t.ok(documented.length >= 3, 'the doc carries real lines');
  for (const line of documented) t.equal(parseLine(line)?.kind, 'srtaccess', line.slice(0, 80));
});

void t.test('srtaccess: an address in brackets, no address, and malformed messages', async (t) => {
  const head = 'Got message #9 from element "access" (element): srtaccess, ';
  t.same(parseLine(`${head}event=(string)accepted, peer=(string)"\\[::1\\]:5000";`), { kind: 'srtaccess', element: 'access', event: 'accepted', peer: '[::1]:5000', replaced: false });
  t.same(parseLine(`${head}event=(string)accepted, peer=(string)127.0.0.1:41519, replaced=(boolean)true;`), {
    kind: 'srtaccess', element: 'access', event: 'accepted', peer: '127.0.0.1:41519', replaced: true,
  });
  t.same(parseLine(`${head}event=(string)rejected, reject-code=(int)1003, reason=(string)"Peer\\ rejected\\ connection", passphrase=(boolean)false;`), {
    kind: 'srtaccess', element: 'access', event: 'rejected', rejectCode: 1003, reason: 'Peer rejected connection', passphrase: false, busy: false,
  });
  t.same(parseLine(`${head}event=(string)rejected, peer=(string)127.0.0.1:56286, reject-code=(int)1000, reason=(string)"Unknown\\ or\\ erroneous", passphrase=(boolean)false, busy=(boolean)true;`), {
    kind: 'srtaccess', element: 'access', event: 'rejected', peer: '127.0.0.1:56286', rejectCode: 1000, reason: 'Unknown or erroneous', passphrase: false, busy: true,
  });
  t.equal(parseLine(`${head}event=(string)rejected, reason=(string)x, passphrase=(boolean)true;`), undefined, 'no code');
  t.equal(parseLine(`${head}event=(string)rejected, reject-code=(int)1010, reason=(string)x;`), undefined, 'no passphrase flag');
  t.equal(parseLine(`${head}event=(string)maybe;`), undefined, 'unknown event');
  t.equal(parseLine(`${head}peer=(string)1.2.3.4:5;`), undefined, 'no event');
});

void t.test('clockbridge messages of a real run: idle, a caller, none, a second caller, none', async (t) => {
  const lines = readFileSync(path.join(fixtures, 'clockbridge-srt.stdout'), 'utf8').split('\n');
  const events = lines.map(parseLine).filter((e): e is StatsEvent => e?.kind === 'clockbridge');
  t.equal(events.length, lines.filter((l) => l.includes('(element): clockbridge,')).length, 'every clockbridge message parses');
  t.ok(events.length >= 10, `${events.length} reports`);
  const active = events.map((e) => (e.kind === 'clockbridge' ? e.inputActive : undefined));
  t.equal(active[0], false, 'no caller at first');
  t.ok(active.includes(true), 'input while a caller sends');
  t.equal(active.at(-1), false, 'no input after the last caller left');
  let underruns = 0;
  for (const event of events) {
    if (event.kind !== 'clockbridge') continue;
    t.equal(event.element, 'bridge');
    t.equal(event.targetSeconds, 0.02, 'the target is engine.jitter_ms');
    t.ok(event.setpointSeconds >= event.targetSeconds, 'the fill kept is the target + the input saw-tooth depth');
    for (const value of [event.driftPpm, event.fillSeconds, event.latencySeconds, event.ratio]) t.ok(Number.isFinite(value));
    t.ok(event.underruns >= underruns, 'underruns are cumulative');
    underruns = event.underruns;
    if (!event.inputActive) t.equal(event.fillSeconds, 0, 'no input: an empty buffer');
  }
  t.equal(parseLine('Got message #1 from element "bridge" (element): clockbridge, drift-ppm=(double)1, fill=(double)0;'), undefined, 'fields missing');
  t.equal(
    parseLine('Got message #1 from element "bridge" (element): clockbridge, drift-ppm=(double)1, fill=(double)0, target=(double)0.02, underruns=(guint64)0, overruns=(guint64)0, input-active=(string)yes, latency=(double)0.03, ratio=(double)1;'),
    undefined,
    'input-active must be a boolean',
  );
  // The element's NAN (a drift it does not know yet), as gst_structure_to_string writes it.
  const unknown = parseLine('Got message #1 from element "bridge" (element): clockbridge, drift-ppm=(double)nan, fill=(double)0.05, target=(double)0.05, underruns=(guint64)0, overruns=(guint64)0, input-active=(boolean)true, latency=(double)0.05, ratio=(double)1;');
  t.ok(unknown?.kind === 'clockbridge' && Number.isNaN(unknown.driftPpm), 'drift-ppm nan: NaN, the rest of the report kept');
  t.ok(unknown !== undefined && !('driftEstimatePpm' in unknown) && !('driftUncertaintyPpm' in unknown), 'an element without the estimate: absent');
  // Captured from the built element: gst-launch-1.0 -m audiotestsrc is-live=true ! clockbridge ! fakesink sync=true
  const [before = '', after = ''] = readFileSync(path.join(fixtures, 'clockbridge-estimate.stdout'), 'utf8').split('\n');
  const none = parseLine(before);
  t.ok(none?.kind === 'clockbridge' && Number.isNaN(none.driftEstimatePpm) && Number.isNaN(none.driftUncertaintyPpm), 'before 10 s of input: nan, NaN');
  t.match(parseLine(after), { kind: 'clockbridge', driftPpm: 310.91497031714169, driftEstimatePpm: 3.7122227159676178, driftUncertaintyPpm: 14.038284751379219 }, 'the estimate and its uncertainty beside drift-ppm');
});

void t.test('clockbridge: output-realtime and input-realtime, unknown when absent', async (t) => {
  // Captured from the built element (gst-launch-1.0 -m, audiotestsrc is-live ! clockbridge ! fakesink):
  // as root (CAP_SYS_NICE), then under `setpriv --bounding-set=-sys_nice` with RLIMIT_RTPRIO 0.
  const granted = 'Got message #52 from element "bridge" (element): clockbridge, running-time=(guint64)1000239934, drift-ppm=(double)153.18660827875644, fill=(double)0.037856617855686545, target=(double)0.02, setpoint=(double)0.030695952499999995, underruns=(guint64)0, overruns=(guint64)0, input-active=(boolean)true, input-frames=(guint64)49152, inserted-silence=(double)0, last-underrun=(double)0, output-realtime=(boolean)true, input-realtime=(boolean)true, latency=(double)0.057856617855686548, ratio=(double)1.0044490130257437;';
  const refused = 'Got message #52 from element "bridge" (element): clockbridge, running-time=(guint64)1000051512, drift-ppm=(double)153.31423228554922, fill=(double)0.037868181770569144, target=(double)0.02, setpoint=(double)0.030732348500000041, underruns=(guint64)0, overruns=(guint64)0, input-active=(boolean)true, input-frames=(guint64)49152, inserted-silence=(double)0, last-underrun=(double)0, output-realtime=(boolean)false, input-realtime=(boolean)false, latency=(double)0.057868181770569141, ratio=(double)1.0044342433850482;';
  t.match(parseLine(granted), { kind: 'clockbridge', element: 'bridge', outputRealtime: true, inputRealtime: true, inputFrames: 49152 });
  t.match(parseLine(refused), { kind: 'clockbridge', outputRealtime: false, inputRealtime: false });
  const mixed = parseLine(granted.replace('input-realtime=(boolean)true', 'input-realtime=(boolean)false'));
  t.match(mixed, { outputRealtime: true, inputRealtime: false }, 'each thread on its own (a paced input, or no input buffer yet)');

  const older = readFileSync(path.join(fixtures, 'clockbridge-srt.stdout'), 'utf8').split('\n').map(parseLine).filter((e) => e?.kind === 'clockbridge');
  t.ok(older.length > 0 && older.every((e) => e !== undefined && !('outputRealtime' in e) && !('inputRealtime' in e)), 'an element without the fields: both unknown (absent), the message still parses');
  const odd = parseLine(granted.replace('output-realtime=(boolean)true', 'output-realtime=(string)yes'));
  t.ok(odd !== undefined && !('outputRealtime' in odd), 'not a boolean: unknown, the rest of the message stands');
});

void t.test('clockbridge: realtime-demotions, absent from an element without the guard', async (t) => {
  // Captured from the built element (gst-launch-1.0 -m, audiotestsrc is-live ! clockbridge name=bridge
  // interval=20000000 ! two spectrum analysers ! fakesink, as root): its output thread, always late,
  // was demoted by the guard after 200 ms of real-time CPU.
  const demoted = 'Got message #78 from element "bridge" (element): clockbridge, running-time=(guint64)261380676, drift-ppm=(double)0.15586217941995439, fill=(double)0.031132989862942776, target=(double)0.02, setpoint=(double)0.031124252000000002, underruns=(guint64)0, overruns=(guint64)0, input-active=(boolean)true, input-frames=(guint64)173056, inserted-silence=(double)0, last-underrun=(double)0, output-realtime=(boolean)false, input-realtime=(boolean)true, realtime-demotions=(guint64)1, latency=(double)0.051132989862942776, ratio=(double)1.0000053985799451, active-input=(string)main, selection=(string)auto, main-connected=(boolean)true, main-level=(double)-26.372513647328176, main-silent=(double)0, output-silent=(double)0;';
  t.match(parseLine(demoted), { kind: 'clockbridge', outputRealtime: false, inputRealtime: true, realtimeDemotions: 1 });
  const without = parseLine(demoted.replace(' realtime-demotions=(guint64)1,', ''));
  t.ok(without !== undefined && !('realtimeDemotions' in without), 'no field: absent, the message still parses');
});
