/**
 * Admission control with the real engine and real gst-launch-1.0 children (docs/capacity.md);
 * overload and priorities are in overload.test.ts. The refusals are made deterministic with
 * `engine.cpu_cores` (the host's capacity as the operator states it): a hundredth of a core
 * carries no pipeline, whatever else the shared machine runs.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import t from 'tap';
import type { OverloadReport } from '../../src/capacity/host-capacity.js';
import type { PipelineView } from '../../src/pipelines/registry.js';
import { findLeftovers } from '../../src/process/reap.js';
import { probeUdpPort } from '../../src/net/udp-port.js';
import type { StationView } from '../../src/stations/station.js';
import { grpcPortOf, TestClient } from '../grpc/client.js';
import { api, startEngine, type EngineProcess } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { dashboardOf, freeStationNumber, stationToml } from '../helpers/stations.js';

const TINY = 'cpu_cores = 0.01';
const LOUD_EQ = [
  { plugin: 'loudness-normalize', target: -23 },
  { plugin: 'eq', bands: [{ freq: 100, gain: -2 }, { freq: 1000, gain: 1 }, { freq: 8000, gain: 1.5 }] },
];

interface ErrorBody { statusCode: number; code: string; message: string }

const body = (srtPort: number, outPort = 9, priority?: 'high' | 'normal'): Record<string, unknown> => ({
  name: `admission ${srtPort}`,
  input: { type: 'srt', port: srtPort, latency: 300 },
  processing: LOUD_EQ,
  output: { type: 'rtp', host: '127.0.0.1', port: outPort },
  ...(priority === undefined ? {} : { priority }),
});

const storedRecords = (engine: EngineProcess): string[] => {
  try {
    return readdirSync(path.join(engine.stateDir, 'pipelines')).filter((f) => f.endsWith('.json'));
  } catch {
    return [];
  }
};


void t.test('a refused create leaves nothing behind: REST 503 with Retry-After, gRPC RESOURCE_EXHAUSTED', async (t) => {
  const engine = await startEngine(t, { extraToml: TINY });
  const port = await freeUdpPort();
  const refused = await api<ErrorBody>(engine, 'POST', '/api/v1/pipelines', body(port));
  t.equal(refused.status, 503);
  t.equal(refused.headers.get('retry-after'), '10');
  t.equal(refused.body.code, 'HOST_AT_CAPACITY');
  t.match(refused.body.message, /^not enough CPU for a new pipeline: the host has [\d.]+ % of a core of CPU headroom and a pipeline of shape loudness-normalize>eq:3 is estimated at [\d.]+ % \(built-in estimate\); capacity 1\.0 %/);
  t.same((await api<{ pipelines: unknown[] }>(engine, 'GET', '/api/v1/pipelines')).body.pipelines, [], 'not listed');
  t.same(storedRecords(engine), [], 'not stored');
  t.same(await findLeftovers(engine.stateDir), [], 'no child process');
  t.equal(await probeUdpPort(port), 'free', 'the input port is free');
  t.ok(engine.logs.some((l) => l.event === 'admission-refused'), 'logged');

  const client = new TestClient(grpcPortOf(engine));
  t.teardown(() => client.close());
  const error = await client.create({ name: 'g', input: { type: 'srt', port }, processing: [], output: { type: 'rtp', host: '127.0.0.1', port: 9 } })
    .then(() => undefined, (e: { code: number; details: string; metadata: { get(k: string): unknown[] } }) => e);
  t.equal(error?.code, status.RESOURCE_EXHAUSTED);
  t.match(error?.details ?? '', /headroom .* shape - is estimated at 3\.6 %/);
  t.same(error?.metadata.get('retry-after'), ['10']);
  t.same(storedRecords(engine), [], 'still nothing stored');
  t.equal(await probeUdpPort(port), 'free');

  const health = await api<{ status: string; overloaded?: OverloadReport }>(engine, 'GET', '/health');
  t.equal(health.status, 200);
  t.equal(health.body.status, 'healthy', 'a full host is still healthy');
});

void t.test('a station start the host cannot carry is a 409 naming the figures', async (t) => {
  const number = await freeStationNumber();
  const engine = await startEngine(t, { extraToml: `${TINY}\n${stationToml({ id: 'studio-c', number, rtpPort: 9, autostart: false })}` });
  const dash = dashboardOf(engine);
  const refused = await api<ErrorBody>(dash, 'POST', '/api/stations/studio-c/start');
  t.equal(refused.status, 409);
  t.equal(refused.body.code, 'STATION_AT_CAPACITY');
  t.match(refused.body.message, /^not enough CPU for this station: the host has/);
  const view = (await api<StationView>(dash, 'GET', '/api/stations/studio-c')).body;
  t.equal(view.enabled, false);
  t.equal(view.pid, null, 'no child');
  t.match(view.last_error ?? '', /not enough CPU/, 'the refusal is shown on the station');
});

void t.test('restored pipelines the host cannot carry wait, visibly, in creation order', async (t) => {
  const first = await startEngine(t);
  const ids: string[] = [];
  for (let i = 0; i < 2; i += 1) {
    const res = await api<PipelineView>(first, 'POST', '/api/v1/pipelines', body(await freeUdpPort()));
    t.equal(res.status, 201);
    ids.push(res.body.id);
  }
  first.process.kill('SIGTERM');
  await first.exited;
  const second = await startEngine(t, { dir: first.dir, extraToml: TINY, restPort: first.restPort });
  const list = (await api<{ pipelines: PipelineView[] }>(second, 'GET', '/api/v1/pipelines')).body.pipelines;
  t.same(list.map((p) => p.id), ids, 'both listed, in creation order');
  t.same(list.map((p) => p.state), ['waiting_for_capacity', 'waiting_for_capacity']);
  t.same(list.map((p) => p.status), ['active', 'active']);
  t.same(await findLeftovers(second.stateDir), [], 'no child started');
  t.equal(second.logs.filter((l) => l.event === 'waiting-for-capacity').length, 2);
  const metrics = (await api(second, 'GET', '/api/v1/metrics')).text;
  t.match(metrics, /^audio_engine_host_cpu_headroom_ratio -?\d/m);
  t.equal((await api(second, 'DELETE', `/api/v1/pipelines/${ids[0] ?? ''}`)).status, 204, 'a waiting pipeline can be deleted');
  t.same(storedRecords(second), [`${ids[1] ?? ''}.json`]);
});
