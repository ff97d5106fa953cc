/**
 * The registry with admission control: restored pipelines start in creation order while they fit,
 * the rest wait visibly and start when room appears. Real store, real gst-launch-1.0 children;
 * every reading the capacity model takes is the test's: the host's /proc/stat, each child's
 * /proc/PID/stat and the clock, so that "room" is whatever the test says. (With the children's
 * real CPU, "other programs" = modelled busy - real children's CPU fell as the children's
 * start-up CPU grew, and on a slow or busy machine the third pipeline found room the model did
 * not give it.) The registry tries waiting pipelines again on its own real 2 s timer: the test
 * asserts after a retry it saw, against the model as it stood, not after a fixed sleep.
 */
import pino from 'pino';
import t, { type Test } from 'tap';
import { HostCapacity } from '../../src/capacity/host-capacity.js';
import { BUILTIN_COST } from '../../src/capacity/model.js';
import { gstEnvironment } from '../../src/gst/environment.js';
import { probeUdpPort } from '../../src/net/udp-port.js';
import { parsePipelineSpec } from '../../src/spec/validate.js';
import { PipelineStore } from '../../src/store/pipeline-store.js';
import { DEFAULT_BACKOFF } from '../../src/supervisor/backoff.js';
import { launchChild } from '../../src/process/child.js';
import { findLeftovers } from '../../src/process/reap.js';
import { PipelineRegistry } from '../../src/pipelines/registry.js';
import { eventually } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';

type RegistryOptions = ConstructorParameters<typeof PipelineRegistry>[0];

/** A registry on `store` and `capacity` whose pipelines run real gst-launch children; shut down, children and all, at teardown. */
function realRegistry(t: Test, deps: Pick<RegistryOptions, 'store' | 'capacity' | 'log'>, stateDir: string): PipelineRegistry {
  const { store, capacity, log } = deps;
  const gst = gstEnvironment(stateDir, process.env);
  const registry = new PipelineRegistry({
    store,
    maxPipelines: 10,
    compile: { statsIntervalMs: 1000, packetsPerSend: 4, clockSource: 'tai', jitterMs: 20 },
    probePort: (port) => probeUdpPort(port),
    reservedPorts: new Map(),
    capacity,
    log,
    now: () => new Date(),
    supervisorDeps: {
      launch: launchChild, command: gst.launchCommand, env: gst.env, log, backoff: DEFAULT_BACKOFF, random: Math.random,
      now: Date.now, stopBounds: { eosMs: 1000, termMs: 1000 }, logLines: 100, statsIntervalMs: 1000, stallAfterMs: 5000,
      readyTimeoutMs: 10_000, prerollExitMs: 2000,
    },
  });
  t.teardown(async () => {
    await registry.shutdown();
    for (const pid of await findLeftovers(stateDir)) process.kill(pid, 'SIGKILL');
  });
  return registry;
}

void t.test('restored pipelines wait for room, in creation order, and start when it appears', async (t) => {
  const stateDir = t.testdir();
  const log = pino({ level: 'silent' });
  const store = new PipelineStore(stateDir);
  await store.open(); // makes its folder
  const ids = ['pl_000000000001', 'pl_000000000002', 'pl_000000000003'];
  for (const [i, id] of ids.entries()) {
    const spec = parsePipelineSpec({ name: `p${i}`, input: { type: 'srt', port: await freeUdpPort() }, output: { type: 'rtp', host: '127.0.0.1', port: 9 } });
    await store.put({ id, seq: i + 1, created_at: new Date().toISOString(), spec });
  }
  // One core, no reserve; each pipeline (no steps) is estimated at 3.6 %. Other programs at 92 %:
  // the first two fit (7.2 of 8), the third does not. Each child the sampler reads uses
  // CHILD_CPU_S of CPU per modelled second from its first reading on (its start-up CPU is in no
  // model), and that CPU is in the host's busy time too: other programs stay exactly as modelled.
  const CHILD_CPU_S = 0.036;
  const host = { totalS: 0, busyS: 0, othersPerSecond: 0.92, clockMs: 0, children: new Map<number, number>() };
  const capacity = new HostCapacity({
    capacityPct: 100,
    reservePercent: 0,
    normalNice: 0,
    log,
    readHost: async () => ({ totalS: host.totalS, idleS: host.totalS - host.busyS, cpus: 1 }),
    readProcess: async (pid) => {
      if (!host.children.has(pid)) host.children.set(pid, 0);
      return host.children.get(pid);
    },
    now: () => host.clockMs,
    tickMs: 1000,
    windowTicks: 5,
  });
  const seconds = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i += 1) {
      host.clockMs += 1000;
      host.totalS += 1;
      host.busyS += host.othersPerSecond;
      for (const [pid, cpuS] of host.children) {
        host.children.set(pid, cpuS + CHILD_CPU_S);
        host.busyS += CHILD_CPU_S;
      }
      await capacity.tick();
    }
  };
  // The registry's tries of the third pipeline (its real 2 s retry timer), with the model's clock
  // at each: an assertion waits for a try against the model as it stands, however late the timer
  // (the model only moves in seconds(), which runs through without a timer in between).
  const tries: { modelMs: number; admitted: boolean }[] = [];
  const tryAdmit = capacity.tryAdmit.bind(capacity);
  capacity.tryAdmit = (id, processing) => {
    const admitted = tryAdmit(id, processing);
    if (id === ids[2]) tries.push({ modelMs: host.clockMs, admitted });
    return admitted;
  };
  const triedSince = (modelMs: number, what: string): Promise<{ modelMs: number; admitted: boolean }> =>
    // A bound for a real timer on a loaded machine, not a figure: the retry runs every 2 s.
    eventually(() => tries.find((x) => x.modelMs >= modelMs), 30_000, what);
  await capacity.tick();
  await seconds(5);
  const registry = realRegistry(t, { store, capacity, log }, stateDir);
  await registry.load();
  registry.startChildren();
  const states = (): string[] => registry.list().map((p) => p.state);
  t.same(registry.list().map((p) => p.id), ids, 'all listed, in creation order');
  t.equal(states()[2], 'waiting_for_capacity', 'the third waits');
  t.not(states()[0], 'waiting_for_capacity');
  t.not(states()[1], 'waiting_for_capacity');
  t.equal(registry.get(ids[2] ?? '').pid, null, 'no child for the waiting one');
  // Bounds for real children starting on a loaded machine, not figures.
  await eventually(() => (registry.list().slice(0, 2).every((p) => p.state === 'running') ? true : undefined), 30_000, 'the first two running');

  await seconds(3); // the running children are measured: other programs stay at 92 %
  t.equal(Math.round(capacity.load().othersPct), 92, 'other programs as modelled, the children\'s CPU aside');
  t.notOk((await triedSince(host.clockMs, 'a retry of the third after the children were measured')).admitted, 'the retry found no room');
  t.equal(states()[2], 'waiting_for_capacity', 'still no room: still waiting');
  t.equal(registry.get(ids[2] ?? '').pid, null, 'still no child');

  host.othersPerSecond = 0.5; // another program ended
  const ended = host.clockMs + 1000;
  await seconds(5);
  t.ok((await triedSince(ended, 'a retry of the third once room appeared')).admitted, 'the retry found room');
  const started = await eventually(() => {
    const third = registry.get(ids[2] ?? '');
    return third.state === 'running' ? third : undefined;
  }, 30_000, 'the third pipeline to start');
  t.ok(started.pid !== null, 'it has a child now');
});

void t.test('restored pipelines with a backup count their second input: where two plain ones fit, the second waits', async (t) => {
  const stateDir = t.testdir();
  const log = pino({ level: 'silent' });
  const store = new PipelineStore(stateDir);
  await store.open();
  const ids = ['pl_00000000000a', 'pl_00000000000b'];
  for (const [i, id] of ids.entries()) {
    const spec = parsePipelineSpec({
      name: `b${i}`,
      input: { type: 'srt', port: await freeUdpPort() },
      backup: { type: 'srt', port: await freeUdpPort() },
      output: { type: 'rtp', host: '127.0.0.1', port: 9 },
    });
    await store.put({ id, seq: i + 1, created_at: new Date().toISOString(), spec });
  }
  // One core, no reserve, other programs at 92 %: 8 % of headroom, room for two plain pipelines
  // (no steps) but for one with a backup only. No child is measured: the model is the test's.
  const plainPct = BUILTIN_COST.basePct;
  const backupPct = BUILTIN_COST.basePct + BUILTIN_COST.backupPct;
  t.ok(2 * plainPct <= 8 && backupPct <= 8 && 2 * backupPct > 8, 'the figures of this test fit the built-in costs');
  const host = { totalS: 0, busyS: 0, clockMs: 0 };
  const capacity = new HostCapacity({
    capacityPct: 100,
    reservePercent: 0,
    normalNice: 0,
    log,
    readHost: async () => ({ totalS: host.totalS, idleS: host.totalS - host.busyS, cpus: 1 }),
    readProcess: async () => undefined,
    now: () => host.clockMs,
    tickMs: 1000,
    windowTicks: 5,
  });
  await capacity.tick();
  for (let i = 0; i < 5; i += 1) {
    host.clockMs += 1000;
    host.totalS += 1;
    host.busyS += 0.92;
    await capacity.tick();
  }
  const registry = realRegistry(t, { store, capacity, log }, stateDir);
  await registry.load();
  registry.startChildren();
  const [first, second] = registry.list();
  t.not(first?.state, 'waiting_for_capacity', 'the first, with its backup, fits');
  t.equal(second?.state, 'waiting_for_capacity', 'the second waits: its backup input does not fit');
  t.equal(registry.get(ids[1] ?? '').pid, null, 'no child for the waiting one');
  t.equal(capacity.cost(ids[0] ?? '')?.shape, '-+backup', 'admitted at the shape with a backup');
  t.equal(capacity.load().committedPct, backupPct, 'counted at its full cost, the second input included');
});
