/**
 * PATCH /api/stations/{id} against a real engine: a station's processing parameters change in
 * its running child (same pid), the live values are kept in the state folder and shown as such,
 * survive kill -9 of the engine, a bad value changes nothing, a structural change restarts, and
 * a changed config.toml wins over stored values.
 */
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import type { ErrorBody } from '../../src/http/errors.js';
import type { StationView } from '../../src/stations/station.js';
import { api, eventually, startEngine, type EngineProcess } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { dashboardOf, freeStationNumber, stationToml } from '../helpers/stations.js';

type Changed = StationView & { applied: string };

function whenRunning(engine: EngineProcess, id: string, other?: number | null): Promise<StationView> {
  return eventually(async () => {
    const got = await api<StationView>(dashboardOf(engine), 'GET', `/api/stations/${id}`);
    return got.status === 200 && got.body.state === 'running' && got.body.pid !== other ? got.body : undefined;
  }, 15_000, `station ${id} running`);
}

const cmdline = (pid: number | null): string[] => readFileSync(`/proc/${String(pid)}/cmdline`, 'utf8').split('\0');

void t.test('a station\'s processing changes live, is kept in the state folder and survives kill -9', async (t) => {
  const number = await freeStationNumber();
  const configured = '[ { plugin = "loudness-normalize", target = -23 }, { plugin = "eq", bands = [ { freq = 200, gain = 0 } ] } ]';
  const first = await startEngine(t, { extraToml: stationToml({ id: 'live-a', number, rtpPort: await freeUdpPort(), processing: configured }) });
  const dash = dashboardOf(first);
  const running = await whenRunning(first, 'live-a');
  t.equal(running.processing_source, 'config');
  t.equal(running.processing_version, 1);
  const file = path.join(first.stateDir, 'stations', 'live-a.json');

  const bad = await api<ErrorBody>(dash, 'PATCH', '/api/stations/live-a', { processing: [{ target: 2 }, {}] });
  t.equal(bad.status, 400, bad.text);
  t.equal(bad.body.message, 'body/processing/0/target must be <= -5');
  const unknown = await api<ErrorBody>(dash, 'PATCH', '/api/stations/live-a', { output: { port: 5 } });
  t.equal(unknown.status, 400);
  t.match(unknown.body.message, /^body\/output is not a known field/);
  t.notOk(existsSync(file), 'nothing stored');

  const live = await api<Changed>(dash, 'PATCH', '/api/stations/live-a', { processing: [{ target: -16 }, { bands: [{ freq: 200, gain: 2 }] }] });
  t.equal(live.status, 200, live.text);
  t.equal(live.body.applied, 'live');
  t.equal(live.body.pid, running.pid, 'same child');
  t.equal(live.body.processing_source, 'state');
  t.equal(live.body.processing_version, 2);
  t.same(live.body.processing, [{ plugin: 'loudness-normalize', target: -16, true_peak: -1 }, { plugin: 'eq', bands: [{ freq: 200, gain: 2, q: 1 }] }]);
  t.same(live.body.config_processing, [{ plugin: 'loudness-normalize', target: -23, true_peak: -1 }, { plugin: 'eq', bands: [{ freq: 200, gain: 0, q: 1 }] }]);
  t.same((JSON.parse(readFileSync(file, 'utf8')) as { processing: unknown }).processing, live.body.processing, 'stored');

  first.process.kill('SIGKILL');
  await first.exited;
  const second = await startEngine(t, { configFile: first.configFile, restPort: first.restPort });
  const back = await whenRunning(second, 'live-a');
  t.equal(back.processing_source, 'state', 'the live values after a restart of the engine');
  t.ok(cmdline(back.pid).includes('target=-16') && cmdline(back.pid).includes('bands="200:2:1"'), 'the child starts with them');

  const restart = await api<Changed>(dashboardOf(second), 'PATCH', '/api/stations/live-a', { processing: [{}] });
  t.equal(restart.body.applied, 'restart', 'removing a step restarts');
  await whenRunning(second, 'live-a', back.pid);

  // config.toml's processing changed: the configuration wins
  second.process.kill('SIGKILL');
  await second.exited;
  writeFileSync(first.configFile, readFileSync(first.configFile, 'utf8').replace('target = -23', 'target = -20'));
  const third = await startEngine(t, { configFile: first.configFile, restPort: first.restPort });
  const reconfigured = await whenRunning(third, 'live-a');
  t.equal(reconfigured.processing_source, 'config');
  t.equal((reconfigured.processing[0] as { target: number }).target, -20);
  t.ok(third.logs.some((l) => l.event === 'station-values-stale'), 'logged');
});
