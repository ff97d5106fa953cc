/**
 * The dashboard's station management against a real engine: start refused while another process
 * holds the harbor port (UDP for SRT, TCP for Icecast), restart replaces the child, logs, 404,
 * concurrent start/restart calls, auth.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import t, { type Test } from 'tap';
import type { ErrorBody } from '../../src/http/errors.js';
import type { StationView } from '../../src/stations/station.js';
import { api, isAlive, startEngine } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { dashboardOf, freeStationNumber, gstProcessesWith, harborPortOf, stationToml, whenStation } from '../helpers/stations.js';

/** Another process (not the engine) that holds a port: a node child with a UDP socket or a TCP listener. */
async function holdPort(t: Test, port: number, transport: 'udp' | 'tcp'): Promise<ChildProcess> {
  const code = transport === 'udp'
    ? `const s=require('dgram').createSocket('udp4');s.bind(${port},'127.0.0.1',()=>console.log('held'));`
    : `require('net').createServer().listen(${port},'127.0.0.1',()=>console.log('held'));`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const lines = createInterface({ input: child.stdout });
  await once(lines, 'line');
  return child;
}

void t.test('start is refused with 409 naming the port and its holder while another process holds it', async (t) => {
  const srtNumber = await freeStationNumber();
  const iceNumber = await freeStationNumber();
  const engine = await startEngine(t, {
    extraToml: [
      stationToml({ id: 'busy-srt', number: srtNumber, rtpPort: await freeUdpPort(), autostart: false }),
      stationToml({ id: 'busy-ice', number: iceNumber, rtpPort: await freeUdpPort(), autostart: false, harbor: 'icecast', password: 'pw' }),
    ].join('\n'),
  });
  const dash = dashboardOf(engine);
  const stopped = await api<StationView>(dash, 'GET', '/api/stations/busy-srt');
  t.equal(stopped.body.state, 'stopped', 'autostart = false: not started');
  t.equal(stopped.body.enabled, false);

  let srtRefusal = '';
  for (const [id, number, transport] of [['busy-srt', srtNumber, 'udp'], ['busy-ice', iceNumber, 'tcp']] as const) {
    const port = harborPortOf(number);
    const holder = await holdPort(t, port, transport);
    const refused = await api<ErrorBody>(dash, 'POST', `/api/stations/${id}/start`);
    t.equal(refused.status, 409, `${id}: 409`);
    t.equal(refused.body.code, 'PORT_IN_USE');
    // The holder by its comm, as ps shows it: node's main thread names itself from Node 24 on
    // (comm "node" on Node 20, "MainThread" on 24, "node-MainThread" on 26).
    const comm = readFileSync(`/proc/${String(holder.pid)}/comm`, 'utf8').trim();
    t.equal(refused.body.message, `port ${port} is already in use by ${comm} (pid ${String(holder.pid)})`, `${transport}: ${refused.body.message}`);
    if (id === 'busy-srt') srtRefusal = refused.body.message;
    const view = await api<StationView>(dash, 'GET', `/api/stations/${id}`);
    t.equal(view.body.state, 'stopped', 'no child was started');
    t.match(view.body.last_error, `port ${port} is already in use`);
    holder.kill('SIGKILL');
    await once(holder, 'exit');
    const started = await api<StationView>(dash, 'POST', `/api/stations/${id}/start`);
    t.equal(started.status, 200, `${id} starts once the port is free`);
    t.equal(started.body.enabled, true);
    t.equal(started.body.last_error, null);
    t.ok(['starting', 'running'].includes(started.body.state), `state ${started.body.state}`);
  }
  const logs = await api(dash, 'GET', '/api/stations/busy-srt/logs');
  t.match(logs.text, `start refused: ${srtRefusal}`, 'the station log has the refusal, holder included');
});

void t.test('restart replaces the child; logs?lines=N; 404; concurrent calls make one child', async (t) => {
  const number = await freeStationNumber();
  const port = harborPortOf(number);
  const engine = await startEngine(t, { extraToml: stationToml({ id: 'studio-b', number, rtpPort: await freeUdpPort() }) });
  const dash = dashboardOf(engine);
  const first = await whenStation(engine, 'studio-b', (s) => s.state === 'running', 'running');

  const again = await api<StationView>(dash, 'POST', '/api/stations/studio-b/start');
  t.equal(again.status, 200, 'start of a running station is 200');
  t.equal(again.body.pid, first.pid, 'and keeps its child');

  const restarted = await api<StationView>(dash, 'POST', '/api/stations/studio-b/restart');
  t.equal(restarted.status, 200);
  t.type(restarted.body.pid, 'number');
  t.not(restarted.body.pid, first.pid, 'a new child');
  t.notOk(isAlive(first.pid ?? -1), 'the old child is gone');
  t.notOk(engine.logs.some((l) => l.event === 'stop-escalate' && l.station_id === 'studio-b'), 'the old child ended by EOS');
  await whenStation(engine, 'studio-b', (s) => s.state === 'running', 'running again');

  for (const n of [1, 5, 12]) {
    const logs = await api(dash, 'GET', `/api/stations/studio-b/logs?lines=${n}`);
    t.equal(logs.status, 200);
    t.match(logs.headers.get('content-type'), 'text/plain');
    t.equal(logs.text.split('\n').filter((l, i, all) => i < all.length - 1 || l !== '').length, n, `lines=${n} gives ${n} lines`);
  }
  const all = await api(dash, 'GET', '/api/stations/studio-b/logs');
  t.ok(all.text.split('\n').length - 1 <= 100, 'default 100 lines at most');
  t.match(all.text, 'restart requested');
  for (const bad of ['0', '10001', 'x']) {
    t.equal((await api(dash, 'GET', `/api/stations/studio-b/logs?lines=${bad}`)).status, 400, `lines=${bad} is a 400`);
  }

  for (const [method, url] of [['GET', '/api/stations/nope'], ['GET', '/api/stations/nope/logs'], ['POST', '/api/stations/nope/start'], ['POST', '/api/stations/nope/restart']] as const) {
    const missing = await api<ErrorBody>(dash, method, url);
    t.equal(missing.status, 404, `${method} ${url}: 404`);
    t.equal(missing.body.message, 'station nope not found');
  }

  // Stop, then many start and restart calls at once: they run one after the other, never two children.
  t.equal((await api(dash, 'POST', '/api/stations/studio-b/stop')).status, 200);
  t.same(await gstProcessesWith(`localport=${port}`), [], 'stopped: no child');
  const calls = await Promise.all([
    ...Array.from({ length: 6 }, () => api<StationView>(dash, 'POST', '/api/stations/studio-b/start')),
    ...Array.from({ length: 3 }, () => api<StationView>(dash, 'POST', '/api/stations/studio-b/restart')),
  ]);
  t.same(calls.map((c) => c.status), Array.from({ length: 9 }, () => 200), 'every call answered 200');
  await whenStation(engine, 'studio-b', (s) => s.state === 'running', 'running');
  await new Promise((resolve) => setTimeout(resolve, 500));
  const children = await gstProcessesWith(`localport=${port}`);
  t.equal(children.length, 1, `one child holds the harbor (${children.join(', ')})`);
  t.equal((await api<StationView>(dash, 'GET', '/api/stations/studio-b')).body.pid, children[0]);
});

void t.test('the dashboard follows the REST auth rule', async (t) => {
  const number = await freeStationNumber();
  const engine = await startEngine(t, {
    extraToml: `[auth]\nenabled = true\napi_keys = ["dash-key"]\n${stationToml({ id: 'locked', number, rtpPort: await freeUdpPort(), autostart: false })}`,
  });
  const dash = dashboardOf(engine);
  for (const [method, url] of [['GET', '/api/stations'], ['GET', '/api/stations/locked/logs'], ['POST', '/api/stations/locked/start'], ['POST', '/api/stations/locked/restart']] as const) {
    const none = await api<ErrorBody>(dash, method, url);
    t.equal(none.status, 401, `${method} ${url} without a key: 401`);
    t.equal(none.headers.get('www-authenticate'), 'Bearer');
    t.equal((await api<ErrorBody>(dash, method, url, undefined, { authorization: 'Bearer wrong' })).status, 401, 'a wrong key: 401');
  }
  t.equal((await api(dash, 'GET', '/api/stations', undefined, { authorization: 'Bearer dash-key' })).status, 200, 'with the key: 200');
  t.equal((await api(dash, 'GET', '/health')).status, 200, 'health stays open, as on the REST port');
});
