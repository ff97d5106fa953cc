/**
 * The registry with admission control: restored pipelines start in creation order while they fit,
 * the rest wait visibly and start when room appears. Real store, real gst-launch-1.0 children;
 * only the host's /proc/stat reading is the test's, so that "room" is whatever the test says.
 */
import pino from 'pino';
import t from 'tap';
import { HostCapacity } from '../../src/capacity/host-capacity.js';
import { readProcessCpu } from '../../src/capacity/proc-stat.js';
import { gstEnvironment } from '../../src/gst/environment.js';
import { probeUdpPort } from '../../src/net/udp-port.js';
import { parsePipelineSpec } from '../../src/spec/validate.js';
import { PipelineStore } from '../../src/store/pipeline-store.js';
import { DEFAULT_BACKOFF } from '../../src/supervisor/backoff.js';
import { launchChild } from '../../src/supervisor/child.js';
import { findLeftovers } from '../../src/supervisor/reap.js';
import { PipelineRegistry } from '../../src/supervisor/registry.js';
import { eventually } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';

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
  // the first two fit (7.2 of 8), the third does not.
  const host = { totalS: 0, busyS: 0, othersPerSecond: 0.92, clockMs: 0 };
  const capacity = new HostCapacity({
    capacityPct: 100,
    reservePercent: 0,
    normalNice: 0,
    log,
    readHost: async () => ({ totalS: host.totalS, idleS: host.totalS - host.busyS, cpus: 1 }),
    readProcess: readProcessCpu,
    now: () => host.clockMs,
    tickMs: 1000,
    windowTicks: 5,
  });
  const seconds = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i += 1) {
      host.clockMs += 1000;
      host.totalS += 1;
      host.busyS += host.othersPerSecond;
      await capacity.tick();
    }
  };
  await capacity.tick();
  await seconds(5);
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
  await registry.load();
  registry.startChildren();
  const states = (): string[] => registry.list().map((p) => p.state);
  t.same(registry.list().map((p) => p.id), ids, 'all listed, in creation order');
  t.equal(states()[2], 'waiting_for_capacity', 'the third waits');
  t.not(states()[0], 'waiting_for_capacity');
  t.not(states()[1], 'waiting_for_capacity');
  t.equal(registry.get(ids[2] ?? '').pid, null, 'no child for the waiting one');
  await eventually(() => (registry.list().slice(0, 2).every((p) => p.state === 'running') ? true : undefined), 15_000, 'the first two running');

  await seconds(3);
  await new Promise((resolve) => setTimeout(resolve, 2500));
  t.equal(states()[2], 'waiting_for_capacity', 'still no room: still waiting');

  host.othersPerSecond = 0.5; // another program ended
  await seconds(5);
  const started = await eventually(() => {
    const third = registry.get(ids[2] ?? '');
    return third.state === 'running' ? third : undefined;
  }, 15_000, 'the third pipeline to start');
  t.ok(started.pid !== null, 'it has a child now');
});
