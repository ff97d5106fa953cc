/**
 * The gRPC edge in-process (no engine child): 1,000 StreamMetrics opened and cancelled leave no
 * subscription, timer or stream behind; close() ends open streams with OK; an unexpected error
 * is INTERNAL without its internals.
 */
import { status } from '@grpc/grpc-js';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import type { EngineServiceDeps } from '../../src/grpc/engine-service.js';
import { buildGrpcServer, type GrpcEdge } from '../../src/grpc/server.js';
import type { Pipeline } from '../../src/pipelines/registry.js';
import { eventually } from '../helpers/engine-process.js';
import { createRequest, record, TestClient } from './client.js';
import { NO_PTP } from '../../src/aes67/pmc.js';
import { NotFoundError } from '../../src/errors.js';

const silent = pino({ level: 'silent' });

function deps(overrides: Partial<EngineServiceDeps['pipelines']> = {}): EngineServiceDeps {
  const none: Pipeline[] = [];
  return {
    log: silent,
    keys: undefined,
    metricsIntervalMs: 100,
    health: { report: async () => ({ status: 'healthy', version: '1.2.3', uptime: '0h 0m' }) },
    pipelines: {
      create: async () => {
        throw new Error('ENOENT: /var/lib/audio-engine/secret/state.json');
      },
      list: () => [],
      get: (id) => {
        throw new NotFoundError(`pipeline ${id} not found`);
      },
      delete: async () => undefined,
      update: async () => {
        throw new Error('not used here');
      },
      resetLoudness: async () => {
        throw new Error('not used here');
      },
      select: async () => {
        throw new Error('not used here');
      },
      entries: () => none.values(),
      size: 0,
      ...overrides,
    },
    aes67: { sdp: () => '' },
    ptp: { status: NO_PTP },
  };
}

async function serve(t: Test, edge: GrpcEdge): Promise<TestClient> {
  const port = await edge.listen(0);
  const client = new TestClient(port);
  t.teardown(async () => {
    client.close();
    await edge.close();
  });
  return client;
}

void t.test('1,000 streams opened and cancelled leave no subscription behind', async (t) => {
  const edge = buildGrpcServer({ ...deps(), bind: '127.0.0.1' });
  const client = await serve(t, edge);
  const hub = edge.service.metrics;
  for (const [round, count] of [1000, 250, 250].entries()) {
    const calls = Array.from({ length: count }, () => client.stream());
    const recorded = calls.map(record);
    await eventually(() => (hub.subscriptions === count ? true : undefined), 20_000, `${count} subscriptions`);
    t.equal(edge.service.openStreams, count);
    await eventually(() => (recorded.every((r) => r.events.length > 0) ? true : undefined), 10_000, 'an event on every stream');
    for (const call of calls) call.cancel();
    const ends = await Promise.all(recorded.map((r) => r.ended));
    t.ok(ends.every((e) => e.code === status.CANCELLED), `round ${round}: every stream ended CANCELLED`);
    await eventually(() => (hub.subscriptions === 0 && edge.service.openStreams === 0 ? true : undefined), 10_000, 'no subscription left');
    t.notOk(hub.running, 'no sampling timer without listeners');
  }
  t.equal(hub.subscriptions, 0);
});

void t.test('close() ends open streams with OK, promptly', async (t) => {
  // Promptly = without the forced shutdown after SHUTDOWN_BOUND_MS (logged as grpc-force-shutdown):
  // which path close() took is read from its log, not from this process's clock.
  const warnings: string[] = [];
  const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(line) });
  const edge = buildGrpcServer({ ...deps(), log, bind: '127.0.0.1' });
  const port = await edge.listen(0);
  const client = new TestClient(port);
  t.teardown(() => client.close());
  const streams = Array.from({ length: 5 }, () => record(client.stream()));
  await eventually(() => (streams.every((s) => s.events.length > 0) ? true : undefined), 5000, 'events');
  const started = Date.now();
  await edge.close();
  t.comment(`closed in ${Date.now() - started} ms`);
  t.notOk(warnings.some((line) => line.includes('grpc-force-shutdown')), 'closed gracefully, not cut after the shutdown bound');
  for (const s of streams) t.same(await s.ended, { code: status.OK, details: 'OK' });
  t.equal(edge.service.metrics.subscriptions, 0);
  t.notOk(edge.service.metrics.running);
});

void t.test('an unexpected error is INTERNAL and tells nothing of the inside', async (t) => {
  const edge = buildGrpcServer({
    ...deps({
      list: () => {
        throw new TypeError("Cannot read properties of undefined (reading 'spec') at /srv/engine/dist/src/x.js:1:2");
      },
    }),
    bind: '127.0.0.1',
  });
  const client = await serve(t, edge);
  for (const call of [client.list(), client.create(createRequest(9000))]) {
    const error = await call.then(
      () => undefined,
      (e: unknown) => e as { code: number; details: string },
    );
    t.same(error && { code: error.code, details: error.details }, { code: status.INTERNAL, details: 'internal error; the engine log has the details' });
  }
});
