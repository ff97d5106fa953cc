import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { checkConfig, configPath, loadConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/errors.js';
import { MAIN, ROOT } from '../helpers/engine-process.js';

void t.test('the shipped config.toml equals the defaults', async (t) => {
  const shipped = await loadConfig(path.join(ROOT, 'config.toml'));
  const defaults = checkConfig({}, path.join(ROOT, 'config.toml'));
  t.same(shipped, defaults);
  t.equal(shipped.server.rest_port, 8080);
  t.equal(shipped.server.grpc_port, 50051);
  t.equal(shipped.server.dashboard_port, 8000);
  t.equal(shipped.engine.max_pipelines, 64);
  t.equal(shipped.stateDir, path.join(ROOT, 'var'), 'state_dir is relative to the config file');
  t.ok(Object.isFrozen(shipped.server), 'frozen');
});

void t.test('which file: --config, then AUDIO_ENGINE_CONFIG, then ./config.toml', async (t) => {
  t.equal(configPath('a.toml', { AUDIO_ENGINE_CONFIG: '/etc/b.toml' }, '/w'), '/w/a.toml');
  t.equal(configPath(undefined, { AUDIO_ENGINE_CONFIG: '/etc/b.toml' }, '/w'), '/etc/b.toml');
  t.equal(configPath(undefined, {}, '/w'), '/w/config.toml');
});

const bad: [string, unknown, string][] = [
  ['unknown key', { engine: { max_pipeline: 3 } }, 'engine.max_pipeline is not a known field'],
  ['unknown section', { logging: {} }, 'logging is not a known field'],
  ['wrong type', { server: { rest_port: '8080' } }, 'server.rest_port must be integer'],
  ['out of range', { engine: { max_pipelines: 0 } }, 'engine.max_pipelines must be >= 1'],
  ['reserve out of range', { engine: { cpu_reserve_percent: 95 } }, 'engine.cpu_reserve_percent must be <= 90'],
  ['negative cores', { engine: { cpu_cores: -1 } }, 'engine.cpu_cores must be >= 0'],
  ['nice out of range', { engine: { normal_priority_nice: 20 } }, 'engine.normal_priority_nice must be <= 19'],
  ['station bad priority', { stations: [{ id: 's', number: 1, name: 'A', priority: 'urgent', output: { type: 'rtp', host: '127.0.0.1', port: 5004 } }] }, 'stations.0.priority must be one of "high", "normal"; got "urgent"'],
  ['bad mode', { mode: 'cloud' }, 'mode must be one of "self-hosted", "managed"; got "cloud"'],
  ['managed without keys', { mode: 'managed' }, 'mode = "managed" needs auth.enabled = true'],
  ['auth on without keys', { auth: { enabled: true } }, 'auth.api_keys is empty'],
  ['bad digest', { auth: { enabled: true, api_keys: ['sha256:xyz'] } }, 'auth.api_keys.0 must be'],
  ['same port twice', { server: { rest_port: 9000, grpc_port: 9000 } }, 'server.grpc_port = 9000 is the same port as server.rest_port'],
  ['station bad id', { stations: [{ id: 'Studio A', number: 1, name: 'A', output: { type: 'rtp', host: '127.0.0.1', port: 5004 } }] }, 'stations.0.id has characters'],
  ['stations same number', { stations: [1, 2].map((i) => ({ id: `s${i}`, number: 1, name: 'A', output: { type: 'rtp', host: '127.0.0.1', port: 5004 } })) }, 'stations.1.number = 1 gives harbor port 8100, the same port as stations.0.number'],
  ['station harbor on rest port', { server: { rest_port: 8100 }, stations: [{ id: 's', number: 1, name: 'A', output: { type: 'rtp', host: '127.0.0.1', port: 5004 } }] }, 'stations.0.number = 1 gives harbor port 8100, the same port as server.rest_port'],
  ['jitter too small', { engine: { jitter_ms: 4 } }, 'engine.jitter_ms must be >= 5'],
  ['jitter too large', { engine: { jitter_ms: 501 } }, 'engine.jitter_ms must be <= 500'],
  ['jitter ceiling too large', { engine: { jitter_max_ms: 2501 } }, 'engine.jitter_max_ms must be <= 2500'],
  ['jitter ceiling below the reserve', { engine: { jitter_ms: 200, jitter_max_ms: 100 } }, 'engine.jitter_max_ms = 100 is below engine.jitter_ms = 200'],
  ['control priority among the children\'s', { engine: { control_priority: 10 } }, "engine.control_priority = 10 is not above the children's real-time threads (10): 0 (off) or 11-99"],
  ['control priority too large', { engine: { control_priority: 100 } }, 'engine.control_priority must be <= 99'],
  ['clock source free text', { clock: { source: 'tai ! fakesink' } }, 'clock.source must be "tai", "realtime" or a PTP hardware clock "/dev/ptpN"; got "tai ! fakesink"'],
  ['clock source other device', { clock: { source: '/dev/sda' } }, 'clock.source must be "tai", "realtime" or a PTP hardware clock "/dev/ptpN"; got "/dev/sda"'],
  ['clock source not a string', { clock: { source: 1 } }, 'clock.source must be string'],
  ['station bad plugin', { stations: [{ id: 's', number: 1, name: 'A', processing: [{ plugin: 'x' }], output: { type: 'rtp', host: '127.0.0.1', port: 5004 } }] }, 'stations.0.processing.0.plugin must be one of'],
];
for (const [what, document, message] of bad) {
  void t.test(`refuses ${what}, naming the key`, async (t) => {
    t.throws(() => checkConfig(document, 'c.toml'), ConfigError);
    try {
      checkConfig(document, 'c.toml');
    } catch (error) {
      t.match((error as Error).message, `c.toml: ${message}`);
    }
  });
}

void t.test('clock and jitter defaults; each clock source form is accepted', async (t) => {
  const defaults = checkConfig({}, 'c.toml');
  t.equal(defaults.clock.source, 'tai');
  t.equal(defaults.engine.jitter_ms, 50);
  t.equal(defaults.engine.jitter_max_ms, 300);
  t.equal(defaults.engine.control_priority, 0, 'off unless asked for');
  t.equal(checkConfig({ engine: { control_priority: 0 } }, 'c.toml').engine.control_priority, 0, '0: off');
  t.equal(checkConfig({ engine: { control_priority: 11 } }, 'c.toml').engine.control_priority, 11, 'just above the children');
  for (const source of ['tai', 'realtime', '/dev/ptp0', '/dev/ptp12']) t.equal(checkConfig({ clock: { source } }, 'c.toml').clock.source, source);
});

void t.test('the engine exits 2 on a bad config, naming the key', async (t) => {
  const dir = t.testdir();
  const file = path.join(dir, 'config.toml');
  writeFileSync(file, '[engine]\nmax_pipelines = "many"\n');
  const run = spawnSync(process.execPath, [MAIN, '--config', file], { encoding: 'utf8', timeout: 10_000 });
  t.equal(run.status, 2);
  t.match(run.stderr, 'engine.max_pipelines must be integer');
  writeFileSync(file, 'mode = "self-hosted"\n[server\n');
  const toml = spawnSync(process.execPath, [MAIN, '--config', file], { encoding: 'utf8', timeout: 10_000 });
  t.equal(toml.status, 2, 'invalid TOML');
  t.match(toml.stderr, /config\.toml:2:/);
  const missing = spawnSync(process.execPath, [MAIN, '--config', path.join(dir, 'nope.toml')], { encoding: 'utf8', timeout: 10_000 });
  t.equal(missing.status, 2);
  t.match(missing.stderr, 'cannot read the configuration file');
  writeFileSync(file, '[clock]\nsource = "/dev/ptp97"\n');
  const phc = spawnSync(process.execPath, [MAIN, '--config', file], { encoding: 'utf8', timeout: 10_000 });
  t.equal(phc.status, 2, 'a PTP hardware clock that is not there');
  t.match(phc.stderr, 'clock.source = "/dev/ptp97" cannot be read (ENOENT)');
  const usage = spawnSync(process.execPath, [MAIN, '--bogus'], { encoding: 'utf8', timeout: 10_000 });
  t.equal(usage.status, 2, 'unknown option');
});
