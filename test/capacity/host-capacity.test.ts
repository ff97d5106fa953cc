import pino from 'pino';
import t from 'tap';
import { HostCapacity, type MeasuredChild } from '../../src/capacity/host-capacity.js';
import { BUILTIN_COST } from '../../src/capacity/model.js';
import { CapacityError } from '../../src/errors.js';
import type { ProcessingStep } from '../../src/spec/schema.js';

const loud: ProcessingStep = { plugin: 'loudness-normalize', target: -23, true_peak: -1 };
const backup = { type: 'srt' as const, port: 9001, latency: 120 };

/**
 * A host whose /proc readings the test writes: busy seconds per second and each child's CPU.
 * `busyTicks`: how many seconds of busy time /proc/stat's tick-counted busy fields show for each
 * second really busy (1: exact; the busy VM showed 0.6-1.2 over a second), idle being exact.
 */
function rig(cores = 2, busyTicks = 1) {
  const state = { clockMs: 0, busyS: 0, totalS: 0, cpu: new Map<number, number>() };
  const capacity = new HostCapacity({
    capacityPct: cores * 100,
    reservePercent: 15,
    normalNice: 10,
    log: pino({ level: 'silent' }),
    readHost: async () => ({ totalS: state.totalS, idleS: state.totalS - state.busyS, cpus: cores }),
    readProcess: async (pid) => state.cpu.get(pid),
    now: () => state.clockMs,
    tickMs: 1000,
    windowTicks: 5,
  });
  /** One second on the host: `othersS` of other programs' CPU plus what the children used. */
  const second = async (othersS: number, children: { pid: number; cpuS: number; child?: MeasuredChild; packets?: number; silenceS?: number }[] = []): Promise<void> => {
    state.clockMs += 1000;
    const busyS = othersS + children.reduce((a, c) => a + c.cpuS, 0);
    state.totalS += cores - busyS + busyS * busyTicks;
    state.busyS += busyS * busyTicks;
    for (const c of children) {
      state.cpu.set(c.pid, (state.cpu.get(c.pid) ?? 0) + c.cpuS);
      const output = c.child?.stats.transport?.output;
      if (output !== undefined && c.packets !== undefined) {
        output.packets += c.packets;
        if (c.child !== undefined) c.child.stats.lastProgressAt = state.clockMs;
      }
      const clock = c.child?.stats.clock;
      if (clock !== undefined && c.silenceS !== undefined) clock.insertedSilenceSeconds += c.silenceS;
    }
    await capacity.tick();
  };
  return { capacity, second };
}

function child(pid: number): MeasuredChild & { stats: { transport: { srt: { connected: boolean }; output: { packets: number } }; lastProgressAt: number; clock: { insertedSilenceSeconds: number } } } {
  return { pid, stats: { transport: { srt: { connected: true }, output: { packets: 0 } }, lastProgressAt: 0, clock: { insertedSilenceSeconds: 0 } } };
}

/** A child that has not connected its SRT input yet (not receiving: its cost is not learned). */
function starting(pid: number): MeasuredChild {
  return { pid, stats: { transport: { srt: { connected: false }, output: { packets: 0 } } } };
}

/** Admits a loudness-normalize pipeline and attaches its child. */
function admitLoud<C extends MeasuredChild>(capacity: HostCapacity, id: string, c: C): C {
  capacity.admit(id, { processing: [loud] });
  capacity.attach(id, c);
  return c;
}

void t.test('others = host busy less the children; admitted pipelines count at full cost', async (t) => {
  const { capacity, second } = rig();
  await capacity.tick();
  const a = admitLoud(capacity, 'pl_a', child(100));
  for (let i = 0; i < 6; i += 1) await second(0.5, [{ pid: 100, cpuS: 0.04, child: a, packets: 1000 }]);
  const load = capacity.load();
  t.equal(Math.round(load.othersPct), 50, 'half a core of other programs');
  t.equal(Math.round(load.childrenPct), 4);
  t.equal(load.committedPct, capacity.cost('pl_a')?.costPct);
  t.same(capacity.pipeline('pl_a'), { realtime_ratio: 1, behind: false });
  t.equal(capacity.cost('pl_a')?.source, 'measured', 'a full window receiving in real time teaches the shape');
  t.equal(Math.round((capacity.cost('pl_a')?.costPct ?? 0) * 10) / 10, 4);
  t.notOk(capacity.overloaded());
  t.ok(capacity.headroomRatio() > 0.5);
});

void t.test('refusal names headroom and cost; tryAdmit is quiet; release gives the room back', async (t) => {
  const { capacity, second } = rig();
  await capacity.tick();
  for (let i = 0; i < 3; i += 1) await second(1.67);
  const error = t.throws(() => capacity.admit('pl_b', { processing: [loud] })) as CapacityError;
  t.ok(error instanceof CapacityError);
  t.equal(error.code, 'HOST_AT_CAPACITY');
  t.equal(error.retryAfterS, 10);
  t.match(error.message, /not enough CPU for a new pipeline: the host has [\d.]+ % of a core of CPU headroom and a pipeline of shape loudness-normalize is estimated at 4\.4 %/);
  t.throws(() => capacity.admit('station:s', { processing: [loud] }, 'STATION_AT_CAPACITY'), { code: 'STATION_AT_CAPACITY' });
  t.notOk(capacity.tryAdmit('pl_b', { processing: [loud] }));
  for (let i = 0; i < 5; i += 1) await second(0.5);
  t.ok(capacity.tryAdmit('pl_b', { processing: [loud] }));
  const before = capacity.load().committedPct;
  capacity.release('pl_b');
  t.ok(capacity.load().committedPct < before);
});

void t.test('overload: reported with figures and the pipelines behind; not learned from', async (t) => {
  const { capacity, second } = rig();
  await capacity.tick();
  const a = admitLoud(capacity, 'pl_c', child(200));
  for (let i = 0; i < 6; i += 1) await second(1.95, [{ pid: 200, cpuS: 0.03, child: a, packets: 700 }]);
  t.ok(capacity.overloaded());
  const report = capacity.overload();
  t.ok(report);
  t.same(report?.pipelines_behind, ['pl_c']);
  t.ok((report?.headroom_ratio ?? 0) < 0);
  t.equal(report?.capacity_cores, 2);
  t.match(report?.message ?? '', /headroom -0\.\d\d cores/);
  t.same(capacity.pipeline('pl_c'), { realtime_ratio: 0.7, behind: true });
  t.equal(capacity.cost('pl_c')?.source, 'built-in', 'a starved pipeline teaches nothing');
  for (let i = 0; i < 6; i += 1) await second(0.2, [{ pid: 200, cpuS: 0.03, child: a, packets: 1000 }]);
  t.notOk(capacity.overloaded(), 'cleared when the other program is gone');
});

void t.test('an overload by a hair still reads as negative headroom, not 0', async (t) => {
  const { capacity, second } = rig();
  await capacity.tick();
  capacity.admit('pl_h', { processing: [loud] });
  // others such that the headroom is -0.04 % of a core: 200 - 30 (reserve) - others - committed
  const othersPct = 170 - capacity.load().committedPct + 0.04;
  for (let i = 0; i < 6; i += 1) await second(othersPct / 100);
  t.ok(capacity.overloaded());
  const report = capacity.overload();
  t.ok(report !== undefined && report.headroom_ratio < 0, `headroom ratio ${report?.headroom_ratio} (not 0 or -0)`);
  t.match(report?.message ?? '', /headroom -0\.01 cores/);
});

void t.test('inserted silence makes a pipeline behind although 1000 packets a second leave', async (t) => {
  const { capacity, second } = rig();
  await capacity.tick();
  const a = admitLoud(capacity, 'pl_a', child(100));
  const run = { pid: 100, cpuS: 0.04, child: a, packets: 1000 };
  for (let i = 0; i < 3; i += 1) await second(0, [run]);
  t.same(capacity.pipeline('pl_a'), { realtime_ratio: 1, behind: false }, 'no silence: real time');
  await second(0, [{ ...run, silenceS: 0.056 }]);
  t.same(capacity.pipeline('pl_a'), { realtime_ratio: 1, behind: true }, '56 ms of inserted silence: behind, though every packet left');
  for (let i = 0; i < 4; i += 1) await second(0, [run]);
  t.equal(capacity.pipeline('pl_a').behind, true, 'still behind while the silence is in the 5 s window');
  t.equal(capacity.cost('pl_a')?.source, 'built-in', 'a window with inserted silence teaches no cost');
  await second(0, [run]);
  t.same(capacity.pipeline('pl_a'), { realtime_ratio: 1, behind: false }, 'real time again once the window is clean');
});

const round6 = (x: number): number => Math.round(x * 1e6) / 1e6;

/** Admits pipelines of `graph` one by one until the host refuses one: how many it took, and the refusal. */
function fill(capacity: HostCapacity, prefix: string, graph: Parameters<HostCapacity['admit']>[1]): { admitted: number; refusal: unknown } {
  for (let i = 0; i < 1000; i += 1) {
    try {
      capacity.admit(`${prefix}${i}`, graph);
    } catch (error) {
      return { admitted: i, refusal: error };
    }
  }
  return { admitted: 1000, refusal: undefined };
}

void t.test('a pipeline with a backup costs its second input: the host that admits N plain pipelines admits fewer', async (t) => {
  // 2 cores, reserve 30 %, other programs 1.4 cores: 30 % of a core of headroom.
  const plainHost = rig();
  await plainHost.capacity.tick();
  for (let i = 0; i < 5; i += 1) await plainHost.second(1.4);
  const backupHost = rig();
  await backupHost.capacity.tick();
  for (let i = 0; i < 5; i += 1) await backupHost.second(1.4);
  const room = plainHost.capacity.load().capacityPct - plainHost.capacity.load().reservePct - plainHost.capacity.load().othersPct;
  t.equal(Math.round(room), 30);

  const plainCost = BUILTIN_COST.basePct + BUILTIN_COST.loudnessPct;
  const backupCost = BUILTIN_COST.basePct + BUILTIN_COST.backupPct + BUILTIN_COST.loudnessPct;
  t.equal(plainHost.capacity.book.cost({ processing: [loud] }).costPct, plainCost);
  t.equal(backupHost.capacity.book.cost({ processing: [loud], backup }).costPct, backupCost);

  const plain = fill(plainHost.capacity, 'pl_plain', { processing: [loud] });
  const withBackup = fill(backupHost.capacity, 'pl_backup', { processing: [loud], backup });
  t.equal(plain.admitted, Math.floor(room / plainCost), `plain: ${plain.admitted} pipelines of ${plainCost.toFixed(1)} %`);
  t.equal(withBackup.admitted, Math.floor(room / backupCost), `with a backup: ${withBackup.admitted} pipelines of ${backupCost.toFixed(1)} %`);
  t.ok(withBackup.admitted < plain.admitted, 'fewer with backups');
  t.equal(round6(backupHost.capacity.load().committedPct), round6(withBackup.admitted * backupCost), 'each admitted at its full cost, backup included');

  const refusal = withBackup.refusal as CapacityError;
  t.ok(refusal instanceof CapacityError);
  t.equal(refusal.code, 'HOST_AT_CAPACITY', 'a 503 HOST_AT_CAPACITY at create, as for any pipeline');
  t.equal(refusal.retryAfterS, 10);
  t.match(refusal.message, new RegExp(`a pipeline of shape loudness-normalize\\+backup is estimated at ${backupCost.toFixed(1)} % \\(built-in estimate\\)`));
});

void t.test('where a plain pipeline still fits, one with a backup waits; adding a backup is readmitted at the higher cost', async (t) => {
  const { capacity, second } = rig();
  await capacity.tick();
  // 200 - 30 reserve - 164 others = 6 % of headroom: a plain pipeline (4.4) fits, one with a backup does not.
  for (let i = 0; i < 5; i += 1) await second(1.64);
  const plainCost = BUILTIN_COST.basePct + BUILTIN_COST.loudnessPct;
  t.ok(plainCost <= 6 && plainCost + BUILTIN_COST.backupPct > 6, 'the figures of this test fit the built-in costs');
  t.notOk(capacity.tryAdmit('pl_hot', { processing: [loud], backup }), 'the registry keeps a restored pipeline with a backup waiting');
  t.equal(capacity.load().committedPct, 0, 'a refusal holds nothing');
  t.ok(capacity.tryAdmit('pl_cold', { processing: [loud] }), 'a plain one of the same steps starts');
  t.equal(capacity.cost('pl_cold')?.shape, 'loudness-normalize');

  // A PATCH that adds a backup to the admitted plain pipeline: the new shape's cost (in place of
  // the old one, so 6 % of room again), or nothing changes.
  t.throws(() => capacity.readmit('pl_cold', { processing: [loud], backup }), { code: 'HOST_AT_CAPACITY' });
  t.equal(capacity.cost('pl_cold')?.shape, 'loudness-normalize', 'refused: still admitted as it was');
  for (let i = 0; i < 5; i += 1) await second(1.0);
  capacity.readmit('pl_cold', { processing: [loud], backup });
  t.equal(capacity.cost('pl_cold')?.shape, 'loudness-normalize+backup');
  t.equal(round6(capacity.load().committedPct), round6(plainCost + BUILTIN_COST.backupPct), 'counted with its second input now');
  capacity.readmit('pl_cold', { processing: [loud] });
  t.equal(capacity.load().committedPct, plainCost, 'and without it once the backup is removed');
});

void t.test('a pipeline behind real time on a busy host holds new pipelines back; on a quiet host it does not', async (t) => {
  // 2 cores, reserve 30 %: "busy" from 140 % (capacity less twice the reserve).
  const { capacity, second } = rig();
  await capacity.tick();
  const a = admitLoud(capacity, 'pl_a', child(300));
  const onTime = { pid: 300, cpuS: 0.05, child: a, packets: 1000 };
  const late = { ...onTime, silenceS: 0.04 };

  // quiet (others 0.5 core): 40 ms of silence is the pipeline's own matter (its link)
  for (let i = 0; i < 5; i += 1) await second(0.5, [i === 4 ? late : onTime]);
  t.equal(capacity.pipeline('pl_a').behind, true);
  t.doesNotThrow(() => capacity.admit('pl_b', { processing: [loud] }), 'admitted on a host 55 % busy');
  capacity.release('pl_b');

  // busy (others 1.45 cores + the child: 150 %) with 30 % headroom, and the same silence
  for (let i = 0; i < 5; i += 1) await second(1.45, [i === 4 ? late : onTime]);
  t.ok(capacity.headroomRatio() > 0.05, 'the costs alone would admit one more');
  const error = t.throws(() => capacity.admit('pl_b', { processing: [loud] })) as CapacityError;
  t.ok(error instanceof CapacityError);
  t.equal(error.code, 'HOST_AT_CAPACITY');
  t.equal(error.retryAfterS, 10);
  t.match(error.message, /^not enough CPU for a new pipeline: 1 admitted pipeline\(s\) behind real time \(pl_a\) on a host 150\.0 % busy: it does not carry what it has, though its headroom of [\d.]+ % would fit a pipeline of shape loudness-normalize estimated at 4\.4 %; capacity 200\.0 %, reserve 30\.0 %/);
  t.notOk(capacity.tryAdmit('pl_w', { processing: [loud] }), 'a waiting pipeline waits too');
  t.equal(capacity.cost('pl_b'), undefined, 'a refusal holds nothing');
  capacity.readmit('pl_a', { processing: [] });
  t.equal(capacity.cost('pl_a')?.shape, '-', 'a change to the pipeline behind is admitted by its cost alone');

  // the silence leaves the 5 s window: the host carries what it has again
  for (let i = 0; i < 5; i += 1) await second(1.45, [onTime]);
  t.equal(capacity.pipeline('pl_a').behind, false);
  t.doesNotThrow(() => capacity.admit('pl_b', { processing: [loud] }));
});

void t.test('admitted pipelines that use more than their costs count at what they use', async (t) => {
  // 2 cores, reserve 30 %: two pipelines at the built-in 4.4 % each, children using 60 % each
  // while they start (not receiving: nothing learned), other programs 20 %
  const { capacity, second } = rig();
  await capacity.tick();
  admitLoud(capacity, 'pl_a', starting(400));
  admitLoud(capacity, 'pl_b', starting(401));
  for (let i = 0; i < 5; i += 1) await second(0.2, [{ pid: 400, cpuS: 0.6 }, { pid: 401, cpuS: 0.6 }]);
  t.equal(capacity.cost('pl_a')?.source, 'built-in');
  t.equal(Math.round(capacity.load().childrenPct), 120);
  t.ok(capacity.headroomRatio() > 0.6, 'by the costs, the host is two thirds free');
  t.doesNotThrow(() => capacity.admit('pl_c', { processing: [loud] }), '200 - 30 - 20 - 120 = 30 % of room');
  capacity.release('pl_c');

  for (let i = 0; i < 5; i += 1) await second(0.2, [{ pid: 400, cpuS: 0.74 }, { pid: 401, cpuS: 0.74 }]);
  const error = t.throws(() => capacity.admit('pl_c', { processing: [loud] })) as CapacityError;
  t.ok(error instanceof CapacityError);
  t.match(error.message, /^not enough CPU for a new pipeline: the host has 2\.0 % of a core of CPU headroom and a pipeline of shape loudness-normalize is estimated at 4\.4 % \(built-in estimate\); .*admitted pipelines 8\.8 %; the admitted pipelines used 148\.0 % over the last 5 s, more than their costs, and count at that$/);
  t.notOk(capacity.tryAdmit('pl_w', { processing: [loud] }), 'a waiting pipeline waits too');
  t.notOk(capacity.overloaded(), 'the overload stays judged by the costs');

  capacity.release('pl_b');
  for (let i = 0; i < 5; i += 1) await second(0.2, [{ pid: 400, cpuS: 0.74 }]);
  t.doesNotThrow(() => capacity.admit('pl_c', { processing: [loud] }), 'one released: room again');
});

void t.test('busy time is the CPUs less their idle time over the engine clock, whatever the ticks say', async (t) => {
  // 2 cores; other programs 0.3 core, one child 1.2 cores: 150 % busy, 50 % idle
  for (const busyTicks of [0.6, 1, 1.2]) {
    const { capacity, second } = rig(2, busyTicks);
    await capacity.tick();
    admitLoud(capacity, 'pl_a', starting(500));
    for (let i = 0; i < 6; i += 1) await second(0.3, [{ pid: 500, cpuS: 1.2 }]);
    const load = capacity.load();
    t.equal(Math.round(load.childrenPct), 120, `children 120 % with busy ticks at ${busyTicks} of the clock`);
    t.equal(Math.round(load.othersPct), 30, `other programs 30 % with busy ticks at ${busyTicks} of the clock`);
  }
});
