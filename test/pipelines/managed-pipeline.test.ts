/**
 * The lifecycle an API pipeline and a station share (src/pipelines/managed-pipeline.ts), with
 * real gst-launch-1.0 children (an SRT listener graph on a free port, RTP to the discard port of
 * 127.0.0.1): a live change reaches the running child, a structural one restarts it once the
 * host admitted it, a held pipeline takes changes at its next start, every refusal (port,
 * capacity, storage) changes nothing, operations run one after the other, the loudness reset.
 * The capacity is a recorder of what the core asks (the host model has its own tests).
 */
import { readFileSync } from 'node:fs';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import type { CompilableSpec } from '../../src/compiler/compile.js';
import { CapacityError, PortInUseError, StorageError } from '../../src/errors.js';
import { gstEnvironment } from '../../src/gst/environment.js';
import { launchChild } from '../../src/process/child.js';
import { DEFAULT_BACKOFF } from '../../src/supervisor/backoff.js';
import { ManagedPipeline, type CapacityCode } from '../../src/pipelines/managed-pipeline.js';
import type { RuntimeInfo } from '../../src/supervisor/child-supervisor.js';
import { eventually, isAlive } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';

type Processing = CompilableSpec['processing'];

const OUTPUT: CompilableSpec['output'] = { type: 'rtp', host: '127.0.0.1', port: 9, ttl: 16, channels: 2, encoding: 'L24', ptime: 1, payload_type: 96, dscp: 34 };
const LOUDNESS: Processing = [{ plugin: 'loudness-normalize', target: -23, true_peak: -1 }];

/** What the core asked of the host's capacity, in order; `refuse` makes the next readmit fail. */
class CapacityRecorder {
  readonly calls: string[] = [];
  refuse = false;
  admit(id: string, graph: { processing: Processing }, code?: CapacityCode): void {
    this.calls.push(`admit ${id} ${graph.processing.length} ${code ?? 'default'}`);
  }
  readmit(id: string, graph: { processing: Processing }, code?: CapacityCode): void {
    if (this.refuse) {
      this.refuse = false;
      throw new CapacityError('not enough CPU for this station: test', 5, code);
    }
    this.calls.push(`readmit ${id} ${graph.processing.length} ${code ?? 'default'}`);
  }
  attach(id: string): void {
    this.calls.push(`attach ${id}`);
  }
  release(id: string): void {
    this.calls.push(`release ${id}`);
  }
  pipeline(): { realtime_ratio: number | null; behind: boolean } {
    return { realtime_ratio: null, behind: false };
  }
}

interface Fixture {
  managed: ManagedPipeline<CompilableSpec>;
  capacity: CapacityRecorder;
  /** Every persisted version with its spec's step count. */
  persisted: string[];
  holding: { held: boolean };
}

async function fixture(t: Test, processing: Processing = LOUDNESS): Promise<Fixture> {
  const gst = gstEnvironment(t.testdir(), process.env);
  const log = pino({ level: 'silent' });
  const capacity = new CapacityRecorder();
  const holding = { held: false };
  const managed = new ManagedPipeline<CompilableSpec>({
    id: 'station:core',
    label: 'station core',
    spec: { input: { type: 'srt', port: await freeUdpPort(), latency: 120 }, processing, output: OUTPUT },
    version: 1,
    compile: { statsIntervalMs: 1000, packetsPerSend: 1, clockSource: 'tai', jitterMs: 20 },
    supervisorDeps: {
      launch: launchChild, command: gst.launchCommand, env: gst.env, log, backoff: DEFAULT_BACKOFF, random: () => 0.5,
      now: Date.now, stopBounds: { eosMs: 1000, termMs: 1000 }, logLines: 200, statsIntervalMs: 1000, stallAfterMs: 10_000,
      readyTimeoutMs: 20_000, prerollExitMs: 2000,
    },
    supervisorOptions: { traceInLog: true },
    capacity,
    capacityCode: 'STATION_AT_CAPACITY',
    held: () => holding.held,
    log,
    now: Date.now,
  });
  t.teardown(() => managed.supervisor.stop());
  return { managed, capacity, persisted: [], holding };
}

const persistInto = (f: Fixture) => async (spec: CompilableSpec, version: number): Promise<void> => {
  f.persisted.push(`v${version} ${spec.processing.length} steps`);
};

function running(managed: ManagedPipeline<CompilableSpec>, other?: number): Promise<RuntimeInfo & { pid: number }> {
  return eventually(() => {
    const s = managed.supervisor.snapshot();
    return s.state === 'running' && s.pid !== null && s.pid !== other ? { ...s, pid: s.pid } : undefined;
  }, 20_000, 'a running child');
}

const cmdline = (pid: number): string[] => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');

void t.test('a live change goes into the running child, persisted before it is taken', async (t) => {
  const f = await fixture(t);
  f.managed.admit();
  f.managed.start();
  const first = await running(f.managed);
  t.same(f.capacity.calls, ['admit station:core 1 STATION_AT_CAPACITY', 'attach station:core']);

  const next: CompilableSpec = { ...f.managed.spec, processing: [{ plugin: 'loudness-normalize', target: -16, true_peak: -1 }] };
  const result = await f.managed.serialize(() => f.managed.change(next, { persist: persistInto(f) }));
  t.equal(result.applied, 'live');
  t.equal(result.version, 2);
  t.same(result.plan, { kind: 'live', assignments: [{ element: 'step0', property: 'target', value: '-16' }] });
  t.same(f.persisted, ['v2 1 steps']);
  t.equal(f.managed.version, 2);
  t.equal(f.managed.spec, next, 'the new spec is the current one');
  t.equal(f.managed.supervisor.snapshot().pid, first.pid, 'the same child');
  t.same(f.capacity.calls, ['admit station:core 1 STATION_AT_CAPACITY', 'attach station:core'], 'a live change is not admitted again');
  t.ok(f.managed.supervisor.logs(200).some((l) => /engine: changed \(live\), version 2$/.test(l)), 'noted in the station log');

  t.same(await f.managed.serialize(() => f.managed.resetLoudness()), ['step0'], 'the loudness measurement of its one step is reset');

  const view = f.managed.runtimeView();
  t.equal(view.state, 'running');
  t.equal(view.pid, first.pid);
  t.equal(view.realtime_ratio, null);
  t.equal(typeof view.input_state, 'string');
  t.ok('clock' in view);

  // the argv of the next child carries the change
  await f.managed.supervisor.restart();
  const second = await running(f.managed, first.pid);
  t.ok(cmdline(second.pid).includes('target=-16'), 'the next child starts with the new target');
});

void t.test('a structural change restarts the child once admitted; every refusal changes nothing', async (t) => {
  const f = await fixture(t);
  f.managed.admit();
  f.managed.start();
  const first = await running(f.managed);
  const withEq: CompilableSpec = { ...f.managed.spec, processing: [...LOUDNESS, { plugin: 'eq', bands: [{ freq: 200, gain: 2, q: 1 }] }] };
  const before = f.managed.spec;
  const unchanged = (what: string): void => {
    t.equal(f.managed.spec, before, `${what}: the spec is the old one`);
    t.equal(f.managed.version, 1, `${what}: the version is the old one`);
    t.equal(f.managed.supervisor.snapshot().pid, first.pid, `${what}: the same child`);
  };

  await t.rejects(f.managed.change(withEq, {
    beforeRestart: async () => {
      throw new PortInUseError(8100, 'input.port 8100 is already in use');
    },
    persist: persistInto(f),
  }), { code: 'PORT_IN_USE' });
  unchanged('port refused');

  f.capacity.refuse = true;
  await t.rejects(f.managed.change(withEq, { persist: persistInto(f) }), { code: 'STATION_AT_CAPACITY' });
  unchanged('capacity refused');

  await t.rejects(f.managed.change(withEq, {
    persist: async () => {
      throw new StorageError('ENOSPC', 'no space left on device');
    },
  }), { code: 'INSUFFICIENT_STORAGE' });
  unchanged('not stored');
  t.same(f.persisted, [], 'nothing persisted');

  const checked: string[] = [];
  const result = await f.managed.change(withEq, {
    beforeRestart: async (previous, next) => {
      checked.push(`${previous.processing.length} -> ${next.processing.length}`);
    },
    persist: persistInto(f),
  });
  t.equal(result.applied, 'restart');
  t.same(result.plan, { kind: 'restart', reasons: ['processing steps added or removed'] });
  t.same(checked, ['1 -> 2'], 'the restart was checked with the old and the new spec');
  t.same(f.persisted, ['v2 2 steps']);
  t.same(f.capacity.calls.slice(2), ['readmit station:core 2 STATION_AT_CAPACITY', 'readmit station:core 2 STATION_AT_CAPACITY'], 'admitted at the new cost (once by the storage refusal, once now)');
  const second = await running(f.managed, first.pid);
  t.notOk(isAlive(first.pid), 'the old child is gone');
  t.ok(cmdline(second.pid).some((arg) => arg.startsWith('bands=')), 'the new child runs the eq step');
});

void t.test('held: a change waits for the next start, without admission', async (t) => {
  const f = await fixture(t, []);
  f.holding.held = true;
  const withLoudness: CompilableSpec = { ...f.managed.spec, processing: LOUDNESS };
  const result = await f.managed.change(withLoudness, { persist: persistInto(f) });
  t.equal(result.applied, 'next-start');
  t.same(f.capacity.calls, [], 'not admitted while held');
  t.equal(f.managed.supervisor.snapshot().pid, null, 'no child started');
  await t.rejects(f.managed.resetLoudness(), { code: 'NOT_MEASURING' }, 'no running child measures');

  const target: CompilableSpec = { ...withLoudness, processing: [{ plugin: 'loudness-normalize', target: -18, true_peak: -1 }] };
  t.equal((await f.managed.change(target, { persist: persistInto(f) })).applied, 'next-start', 'a parameter without a child: the next start');
  t.same(f.persisted, ['v2 1 steps', 'v3 1 steps']);

  f.holding.held = false;
  f.managed.start();
  const child = await running(f.managed);
  t.ok(cmdline(child.pid).includes('target=-18'), 'the first child starts with the last change');
});

void t.test('adopt: values read back become the next child\'s without a change', async (t) => {
  const f = await fixture(t, []);
  f.managed.adopt({ ...f.managed.spec, processing: LOUDNESS }, 4);
  t.equal(f.managed.version, 4);
  f.managed.start();
  const child = await running(f.managed);
  t.ok(cmdline(child.pid).includes('target=-23'));
  t.same(f.persisted, [], 'nothing persisted');
});

void t.test('operations run one after the other, a failed one does not stop the next', async (t) => {
  const f = await fixture(t, []);
  const order: string[] = [];
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const first = f.managed.serialize(async () => {
    order.push('first begins');
    await gate;
    order.push('first ends');
    throw new Error('first failed');
  });
  const second = f.managed.serialize(async () => {
    order.push('second');
    return 2;
  });
  const settled = f.managed.settled().then(() => order.push('settled'));
  await new Promise((resolve) => setImmediate(resolve));
  t.same(order, ['first begins'], 'the second waits');
  release();
  await t.rejects(first, /first failed/);
  t.equal(await second, 2);
  await settled;
  t.same(order, ['first begins', 'first ends', 'second', 'settled']);
  await t.rejects(f.managed.resetLoudness(), { code: 'NOT_MEASURING', message: /station core has no loudness-normalize step/ });
});
