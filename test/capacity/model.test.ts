import t from 'tap';
import { BACKUP_SHAPE, BUILTIN_COST, CostBook, admissionRoomPct, busyNearCapacity, decide, graphShape, headroomPct, isOverloaded, niceIncrement, realTimeRatio, type HostLoad } from '../../src/capacity/model.js';
import { parseHostTimes, parseProcessCpu } from '../../src/capacity/proc-stat.js';
import type { ProcessingStep } from '../../src/spec/schema.js';

const loud: ProcessingStep = { plugin: 'loudness-normalize', target: -23, true_peak: -1 };
const eq3: ProcessingStep = { plugin: 'eq', bands: [100, 1000, 8000].map((freq) => ({ freq, gain: 1, q: 1 })) };
const backup = { type: 'srt' as const, port: 9001, latency: 120 };

const load = (over: Partial<HostLoad> = {}): HostLoad => ({
  capacityPct: 200, reservePct: 30, othersPct: 20, committedPct: 100, childrenPct: 90, measured: true, ...over,
});

void t.test('graph shape: ordered plugins, eq with its band count', async (t) => {
  t.equal(graphShape({ processing: [] }), '-');
  t.equal(graphShape({ processing: [loud, eq3] }), 'loudness-normalize>eq:3');
  t.equal(graphShape({ processing: [eq3, loud] }), 'eq:3>loudness-normalize', 'order matters');
  t.equal(graphShape({ processing: [], backup: undefined }), '-', 'no backup: the shape of before');
});

void t.test('a backup input is part of the shape and of its cost', async (t) => {
  t.equal(BACKUP_SHAPE, '+backup');
  t.equal(graphShape({ processing: [], backup }), '-+backup');
  t.equal(graphShape({ processing: [loud, eq3], backup }), 'loudness-normalize>eq:3+backup');
  const book = new CostBook();
  const plain = book.cost({ processing: [loud, eq3] });
  const hot = book.cost({ processing: [loud, eq3], backup });
  t.equal(hot.source, 'built-in');
  t.ok(BUILTIN_COST.backupPct > 0);
  t.equal(hot.costPct, plain.costPct + BUILTIN_COST.backupPct, 'the second input, decoded all the time, costs on top');
  book.learn('loudness-normalize>eq:3', 3.0);
  t.equal(book.cost({ processing: [loud, eq3], backup }).source, 'built-in', 'a plain pipeline measured teaches nothing about one with a backup');
  book.learn('loudness-normalize>eq:3+backup', 5.5);
  t.same(book.cost({ processing: [loud, eq3], backup }), { shape: 'loudness-normalize>eq:3+backup', costPct: 5.5, source: 'measured', windows: 1 });
  t.equal(book.cost({ processing: [loud, eq3] }).costPct, 3.0, 'and the other way round');
});

void t.test('the built-in estimate until a shape is measured, then the learned cost', async (t) => {
  const book = new CostBook();
  const first = book.cost({ processing: [loud, eq3] });
  t.equal(first.source, 'built-in');
  t.equal(first.costPct, BUILTIN_COST.basePct + BUILTIN_COST.loudnessPct + 3 * BUILTIN_COST.eqBandPct);
  book.learn('loudness-normalize>eq:3', 3.0);
  t.same(book.cost({ processing: [loud, eq3] }), { shape: 'loudness-normalize>eq:3', costPct: 3.0, source: 'measured', windows: 1 });
  book.learn('loudness-normalize>eq:3', 4.0);
  t.equal(book.cost({ processing: [loud, eq3] }).costPct, 3.3, 'moving average (0.3 of each new window)');
  t.equal(book.cost({ processing: [loud] }).source, 'built-in', 'another shape keeps its estimate');
  book.learn('-', Number.NaN);
  book.learn('-', 0);
  t.equal(book.cost({ processing: [] }).source, 'built-in', 'no learning from empty windows');
});

void t.test('admission: fits in the headroom or is refused with the figures', async (t) => {
  t.equal(headroomPct(load()), 50);
  const book = new CostBook();
  const ok = decide(load(), book.cost({ processing: [loud, eq3] }));
  t.ok(ok.admit);
  t.equal(ok.reason, '');
  const no = decide(load({ othersPct: 68 }), book.cost({ processing: [loud, eq3] }));
  t.notOk(no.admit);
  t.equal(no.headroomPct, 2);
  t.match(no.reason, /the host has 2\.0 % of a core of CPU headroom and a pipeline of shape loudness-normalize>eq:3 is estimated at 4\.7 % \(built-in estimate\)/);
  t.match(no.reason, /capacity 200\.0 %, reserve 30\.0 %, other programs 68\.0 %, admitted pipelines 100\.0 %/);
  t.notOk(decide(load({ capacityPct: 1, reservePct: 0.15, othersPct: 0, committedPct: 0 }), book.cost({ processing: [] })).admit, 'a tiny capacity refuses everything');
});

void t.test('admission: pipelines that used more than their costs count at what they used', async (t) => {
  const cost = new CostBook().cost({ processing: [loud, eq3] });
  t.equal(admissionRoomPct(load()), 50, 'children below their costs: the headroom');
  t.equal(admissionRoomPct(load({ childrenPct: 120 })), 30, 'children above: what they used');
  t.equal(admissionRoomPct(load({ childrenPct: 120, measured: false })), 50, 'an unmeasured host has only the costs');
  t.equal(headroomPct(load({ childrenPct: 120 })), 50, 'the headroom (and so the overload) stays by the costs');
  const no = decide(load({ childrenPct: 146 }), cost);
  t.notOk(no.admit, 'the costs would leave 50 %, the host used all but 4 %');
  t.equal(no.headroomPct, 4);
  t.match(no.reason, /^the host has 4\.0 % of a core of CPU headroom and a pipeline of shape loudness-normalize>eq:3 is estimated at 4\.7 % \(built-in estimate\); capacity 200\.0 %, reserve 30\.0 %, other programs 20\.0 %, admitted pipelines 100\.0 %; the admitted pipelines used 146\.0 % over the last 5 s, more than their costs, and count at that$/);
  t.ok(decide(load({ childrenPct: 145 }), cost).admit, 'room 5 % for 4.7 %');
  t.notMatch(decide(load({ othersPct: 68 }), cost).reason, /used/, 'children below their costs: not named');
});

void t.test('admission: pipelines behind real time refuse only on a host busy near its capacity', async (t) => {
  const cost = new CostBook().cost({ processing: [loud] });
  // capacity 200, reserve 30: busy from 140 (others + children)
  t.notOk(busyNearCapacity(load({ othersPct: 49, childrenPct: 90 })), '139 % busy');
  t.ok(busyNearCapacity(load({ othersPct: 50, childrenPct: 90 })), '140 % busy');
  t.notOk(busyNearCapacity(load({ othersPct: 0, childrenPct: 190, measured: false })), 'an unmeasured host is never busy');
  t.ok(decide(load({ othersPct: 20 }), cost, ['pl_a']).admit, '110 % busy: a pipeline behind is its own matter');
  const no = decide(load({ othersPct: 60 }), cost, ['pl_a', 'pl_b']);
  t.notOk(no.admit, '150 % busy with two pipelines behind');
  t.equal(no.headroomPct, 10, 'though the costs fit');
  t.match(no.reason, /^2 admitted pipeline\(s\) behind real time \(pl_a, pl_b\) on a host 150\.0 % busy: it does not carry what it has, though its headroom of 10\.0 % would fit a pipeline of shape loudness-normalize estimated at 4\.4 %; capacity 200\.0 %/);
  t.ok(decide(load({ othersPct: 60 }), cost, []).admit, 'the same host with every pipeline real time admits');
  const many = decide(load({ othersPct: 60 }), cost, ['a', 'b', 'c', 'd', 'e', 'f', 'g']);
  t.match(many.reason, /^7 admitted pipeline\(s\) behind real time \(a, b, c, d, e and 2 more\)/);
  t.match(decide(load({ othersPct: 68 }), cost, ['pl_a']).reason, /^the host has 2\.0 % of a core of CPU headroom/, 'no room: the cost refusal, as before');
});

void t.test('overloaded: the admitted pipelines do not fit within the reserve', async (t) => {
  t.notOk(isOverloaded(load()));
  t.ok(isOverloaded(load({ othersPct: 71 })));
});

void t.test('priority: high at the engine niceness, normal above it', async (t) => {
  t.equal(niceIncrement('high', 10), 0);
  t.equal(niceIncrement('normal', 10), 10);
  t.equal(niceIncrement('normal', 0), 0);
});

void t.test('real-time ratio: packets per second / 1000', async (t) => {
  t.equal(realTimeRatio(5000, 5), 1);
  t.equal(realTimeRatio(4000, 5), 0.8);
  t.equal(realTimeRatio(1, 0), undefined);
});

void t.test('/proc parsers', async (t) => {
  // The first line of /proc/stat on the 2-core test VM (Debian 12), 2026-11-23.
  const stat = 'cpu  80702 0 27051 47950 709 0 548 840 0 0\ncpu0 40000 0 13000 24000 300 0 270 420 0 0\n';
  t.same(parseHostTimes(stat), { totalS: (80702 + 0 + 27051 + 47950 + 709 + 0 + 548 + 840) / 100, idleS: (47950 + 709) / 100, cpus: 1 });
  t.equal(parseHostTimes('intr 1 2 3\n'), undefined);
  const pid = '4242 (gst-launch-1.0) S 1 4242 4242 0 -1 4194560 3000 0 0 0 250 31 0 0 20 0 9 0 12345 900000000 5000 18446744073709551615';
  t.equal(parseProcessCpu(pid), 2.81);
  t.equal(parseProcessCpu('1 (a (b) c) S 1 1 1 0 -1 0 0 0 0 0 7 3 0 0'), 0.1, 'a name with spaces and parentheses');
});
