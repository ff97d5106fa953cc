import { PassThrough } from 'node:stream';
import t from 'tap';
import { ControlChannel, ControlFailure, formatCommand } from '../../src/supervisor/control-channel.js';
import { parseLine } from '../../src/stats/parse-line.js';

const target = [{ element: 'step0', property: 'target', value: '-16' }];

function written(stream: PassThrough): string[] {
  const lines: string[] = [];
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n').filter((l) => l !== '')));
  return lines;
}

void t.test('the command line: version, id, assignments; nothing outside the grammar', async (t) => {
  t.equal(formatCommand(7, [...target, { element: 'step1', property: 'bands', value: '100:-2:1,8000:1.5:1' }]), 'v1 7 set step0.target=-16 step1.bands=100:-2:1,8000:1.5:1\n');
  for (const bad of [
    { element: 'step0 x', property: 'target', value: '1' },
    { element: 'step0', property: 'target', value: '1\nv1 9 set' },
    { element: 'step0', property: 'Target', value: '1' },
    { element: 'step0', property: 'target', value: '"1"' },
    { element: 'step0', property: 'target', value: '' },
  ]) t.throws(() => formatCommand(1, [bad]), /out of grammar/, JSON.stringify(bad));
  t.throws(() => formatCommand(0, target));
  t.throws(() => formatCommand(1, []));
});

void t.test('the acknowledgement as gst-launch-1.0 -m prints it', async (t) => {
  t.same(parseLine('Got message #412 from element "control" (element): enginecontrol, version=(int)1, id=(guint64)3, ok=(boolean)true;'), { kind: 'enginecontrol', element: 'control', id: 3, ok: true });
  t.same(parseLine('Got message #413 from element "control" (element): enginecontrol, version=(int)1, id=(guint64)4, ok=(boolean)false, error=(string)"step1.target:\\ -4\\ is\\ out\\ of\\ range";'), { kind: 'enginecontrol', element: 'control', id: 4, ok: false, error: 'step1.target: -4 is out of range' });
  t.equal(parseLine('Got message #1 from element "control" (element): enginecontrol, version=(int)2, id=(guint64)4, ok=(boolean)true;'), undefined, 'another version is not ours');
});

void t.test('resolves on ok, rejects on a refusal', async (t) => {
  const out = new PassThrough();
  const lines = written(out);
  const channel = new ControlChannel(out, 1000);
  const first = channel.send(target);
  const second = channel.send(target);
  await new Promise((resolve) => setImmediate(resolve));
  t.same(lines, ['v1 1 set step0.target=-16', 'v1 2 set step0.target=-16']);
  channel.onAck({ kind: 'enginecontrol', element: 'control', id: 2, ok: false, error: 'no element step0' });
  channel.onAck({ kind: 'enginecontrol', element: 'control', id: 1, ok: true });
  await t.resolves(first);
  await t.rejects(second, new ControlFailure('refused', 'the child refused the change: no element step0'));
  channel.onAck({ kind: 'enginecontrol', element: 'control', id: 1, ok: true }); // late: ignored
});

void t.test('no answer: written again once after the timeout, then a timeout failure', async (t) => {
  const out = new PassThrough();
  const lines = written(out);
  const channel = new ControlChannel(out, 40);
  const started = Date.now();
  await t.rejects(channel.send(target), { name: 'ControlFailure', reason: 'timeout' });
  t.ok(Date.now() - started >= 79, 'two timeouts');
  await new Promise((resolve) => setImmediate(resolve));
  t.same(lines, ['v1 1 set step0.target=-16', 'v1 1 set step0.target=-16'], 'the same command twice');
});

void t.test('an answer to the repeated command is taken', async (t) => {
  const out = new PassThrough();
  const channel = new ControlChannel(out, 40);
  const pending = channel.send(target);
  setTimeout(() => channel.onAck({ kind: 'enginecontrol', element: 'control', id: 1, ok: true }), 60);
  await t.resolves(pending);
});

void t.test('the child goes away: waiting commands fail, later ones too', async (t) => {
  const out = new PassThrough();
  const channel = new ControlChannel(out, 1000);
  const pending = channel.send(target);
  channel.close();
  await t.rejects(pending, { name: 'ControlFailure', reason: 'gone' });
  out.destroy();
  await t.rejects(channel.send(target), { name: 'ControlFailure', reason: 'gone' });
});
