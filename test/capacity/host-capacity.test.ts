import pino from 'pino';
import t from 'tap';
import { HostCapacity, type MeasuredChild } from '../../src/capacity/host-capacity.js';
import { CapacityError } from '../../src/errors.js';
import type { ProcessingStep } from '../../src/spec/schema.js';

const loud: ProcessingStep = { plugin: 'loudness-normalize', target: -23, true_peak: -1 };

/** A host whose /proc readings the test writes: busy seconds per second and each child's CPU. */
function rig(cores = 2) {
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
    state.totalS += cores;
    state.busyS += othersS;
    for (const c of children) {
      state.cpu.set(c.pid, (state.cpu.get(c.pid) ?? 0) + c.cpuS);
      state.busyS += c.cpuS;
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

void t.test('others = host busy less the children; admitted pipelines count at full cost', async (t) => {
  const { capacity, second } = rig();
  await capacity.tick();
  const a = child(100);
  capacity.admit('pl_a', [loud]);
  capacity.attach('pl_a', a);
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
  const error = t.throws(() => capacity.admit('pl_b', [loud])) as CapacityError;
  t.ok(error instanceof CapacityError);
  t.equal(error.code, 'HOST_AT_CAPACITY');
  t.equal(error.retryAfterS, 10);
  t.match(error.message, /not enough CPU for a new pipeline: the host has [\d.]+ % of a core of CPU headroom and a pipeline of shape loudness-normalize is estimated at 4\.4 %/);
  t.throws(() => capacity.admit('station:s', [loud], 'STATION_AT_CAPACITY'), { code: 'STATION_AT_CAPACITY' });
  t.notOk(capacity.tryAdmit('pl_b', [loud]));
  for (let i = 0; i < 5; i += 1) await second(0.5);
  t.ok(capacity.tryAdmit('pl_b', [loud]));
  const before = capacity.load().committedPct;
  capacity.release('pl_b');
  t.ok(capacity.load().committedPct < before);
});

void t.test('overload: reported with figures and the pipelines behind; not learned from', async (t) => {
  const { capacity, second } = rig();
  await capacity.tick();
  const a = child(200);
  capacity.admit('pl_c', [loud]);
  capacity.attach('pl_c', a);
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

void t.test('inserted silence makes a pipeline behind although 1000 packets a second leave', async (t) => {
  const { capacity, second } = rig();
  await capacity.tick();
  const a = child(100);
  capacity.admit('pl_a', [loud]);
  capacity.attach('pl_a', a);
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
