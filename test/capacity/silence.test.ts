/**
 * Real time is judged by the audio: a pipeline whose every RTP packet left on time but whose clock
 * bridge inserted silence while its input had audio (it came late) is behind, and its window does
 * not teach the shape's cost. The host's /proc readings and the child's reports are the test's.
 */
import pino from 'pino';
import t from 'tap';
import { HostCapacity, type MeasuredChild } from '../../src/capacity/host-capacity.js';
import type { ProcessingStep } from '../../src/spec/schema.js';

const loud: ProcessingStep = { plugin: 'loudness-normalize', target: -23, true_peak: -1 };

interface TestChild extends MeasuredChild {
  stats: { transport: { srt: { connected: boolean }; output: { packets: number } }; lastProgressAt: number; clock: { insertedSilenceSeconds: number } };
}

void t.test('inserted silence makes a pipeline behind although 1000 packets a second leave', async (t) => {
  const state = { clockMs: 0, busyS: 0, totalS: 0, cpu: 0 };
  const capacity = new HostCapacity({
    capacityPct: 200,
    reservePercent: 15,
    normalNice: 10,
    log: pino({ level: 'silent' }),
    readHost: async () => ({ totalS: state.totalS, idleS: state.totalS - state.busyS, cpus: 2 }),
    readProcess: async () => state.cpu,
    now: () => state.clockMs,
    tickMs: 1000,
    windowTicks: 5,
  });
  const a: TestChild = { pid: 100, stats: { transport: { srt: { connected: true }, output: { packets: 0 } }, lastProgressAt: 0, clock: { insertedSilenceSeconds: 0 } } };
  const second = async (silenceS = 0): Promise<void> => {
    state.clockMs += 1000;
    state.totalS += 2;
    state.cpu += 0.04;
    state.busyS += 0.04;
    a.stats.transport.output.packets += 1000;
    a.stats.lastProgressAt = state.clockMs;
    a.stats.clock.insertedSilenceSeconds += silenceS;
    await capacity.tick();
  };
  await capacity.tick();
  capacity.admit('pl_a', [loud]);
  capacity.attach('pl_a', a);
  for (let i = 0; i < 3; i += 1) await second();
  t.same(capacity.pipeline('pl_a'), { realtime_ratio: 1, behind: false }, 'no silence: real time');
  await second(0.056);
  t.same(capacity.pipeline('pl_a'), { realtime_ratio: 1, behind: true }, '56 ms of inserted silence: behind, though every packet left');
  for (let i = 0; i < 4; i += 1) await second();
  t.equal(capacity.pipeline('pl_a').behind, true, 'still behind while the silence is in the 5 s window');
  t.equal(capacity.cost('pl_a')?.source, 'built-in', 'a window with inserted silence teaches no cost');
  await second();
  t.same(capacity.pipeline('pl_a'), { realtime_ratio: 1, behind: false }, 'real time again once the window is clean');
});
