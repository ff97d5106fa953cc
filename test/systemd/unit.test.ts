/**
 * The systemd unit, checked by systemd's own analyzers (no systemd needs to run):
 *   systemd-analyze verify            no complaint at all
 *   systemd-analyze security --offline=yes   overall exposure at most 2.0
 * and the contract choices in it. `verify` also checks that ExecStart's binary exists. The unit
 * names /usr/bin/node (where Debian's nodejs puts it; scripts/install-service.sh rewrites the path
 * when node lives elsewhere), so the test verifies a copy whose ExecStart names the node running
 * this test: only that path differs, every other line is verified as shipped.
 * Readiness: the engine runs `systemd-notify --ready` only under systemd (NOTIFY_SOCKET set).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { STOP_BOUNDS } from '../../src/app.js';
import { eventually, ROOT, startEngine } from '../helpers/engine-process.js';

const UNIT = path.join(ROOT, 'systemd', 'audio-engine.service');
const text = readFileSync(UNIT, 'utf8');
const haveAnalyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' }).status === 0;

function setting(key: string): string[] {
  return [...text.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => (m[1] ?? '').trim());
}

/** Seconds of a systemd time span like 20, 20s, 1min 30s. */
function seconds(span: string): number {
  let total = 0;
  for (const m of span.matchAll(/(\d+(?:\.\d+)?)\s*(ms|s|sec|min|m|h)?/g)) {
    const value = Number(m[1]);
    const unit = m[2] ?? 's';
    total += unit === 'ms' ? value / 1000 : unit === 'min' || unit === 'm' ? value * 60 : unit === 'h' ? value * 3600 : value;
  }
  return total;
}

void t.test('systemd-analyze verify finds nothing to complain about', { skip: haveAnalyze ? false : 'systemd-analyze is not installed' }, async (t) => {
  const execStart = setting('ExecStart')[0] ?? '';
  const binary = execStart.split(/\s+/)[0] ?? '';
  t.equal(binary, '/usr/bin/node', 'ExecStart runs node by its absolute path');
  const dir = t.testdir();
  const copy = path.join(dir, 'audio-engine.service');
  writeFileSync(copy, text.replace(`ExecStart=${binary} `, `ExecStart=${process.execPath} `));
  const run = spawnSync('systemd-analyze', ['verify', copy], { encoding: 'utf8' });
  t.equal(run.status, 0, `exit status; stderr: ${run.stderr}`);
  t.equal(`${run.stdout}${run.stderr}`.trim(), '', 'no warning at all');
  if (existsSync(binary)) {
    const shipped = spawnSync('systemd-analyze', ['verify', UNIT], { encoding: 'utf8' });
    t.equal(`${shipped.stdout}${shipped.stderr}`.trim(), '', `the shipped unit as is (${binary} exists here)`);
  }
});

void t.test('systemd-analyze security --offline=yes: exposure at most 2.0', { skip: haveAnalyze ? false : 'systemd-analyze is not installed' }, async (t) => {
  const run = spawnSync('systemd-analyze', ['security', '--offline=yes', '--no-pager', UNIT], { encoding: 'utf8' });
  const out = `${run.stdout}\n${run.stderr}`;
  const m = /Overall exposure level for audio-engine\.service:\s*([\d.]+)/.exec(out);
  t.ok(m, 'the overall exposure line is there');
  const score = Number(m?.[1]);
  t.ok(score <= 2.0, `exposure ${score} <= 2.0`);
  t.comment(`systemd-analyze security: exposure ${score}`);
  t.notMatch(out, /Unknown key|ignoring/, 'no ignored setting');
});

void t.test('the unit carries the contract choices', async (t) => {
  t.same(setting('Type'), ['notify']);
  t.same(setting('NotifyAccess'), ['all'], 'the ready message comes from the systemd-notify child');
  t.same(setting('KillMode'), ['mixed'], 'SIGTERM to the engine only; it ends its children with EOS');
  t.same(setting('Restart'), ['always']);
  const engineStop = (STOP_BOUNDS.eosMs + STOP_BOUNDS.termMs) / 1000;
  const stop = seconds(setting('TimeoutStopSec')[0] ?? '0');
  t.ok(stop > engineStop + 5, `TimeoutStopSec ${stop} s is longer than the engine's own bound (${engineStop} s per child, in parallel) with margin`);
  t.same(setting('User'), ['audio-engine']);
  t.same(setting('StateDirectory'), ['audio-engine']);
  t.same(setting('ReadWritePaths'), ['/var/lib/audio-engine']);
  for (const [key, value] of [['ProtectSystem', 'strict'], ['ProtectHome', 'yes'], ['ProtectProc', 'invisible'], ['NoNewPrivileges', 'yes'], ['PrivateTmp', 'yes'], ['CapabilityBoundingSet', '']] as const) {
    t.same(setting(key), [value], `${key}=${value}`);
  }
  t.same(setting('RestrictAddressFamilies'), ['AF_INET AF_INET6 AF_UNIX AF_NETLINK']);
  const filters = setting('SystemCallFilter');
  t.equal(filters[0], '@system-service', 'an allow list first: prctl (setpriv --pdeathsig) is in @system-service');
  const deny = filters.findIndex((f) => f.startsWith('~'));
  t.match(filters[deny], /^~@privileged /, 'then @privileged and other groups taken out');
  t.equal(filters.indexOf('capset'), filters.length - 1, 'capset (setpriv calls it before PR_SET_PDEATHSIG) put back last, after the ~ line');
  t.ok(deny >= 0 && deny < filters.indexOf('capset'), 'capset comes after the deny line (systemd applies the lines in order)');
  // Real time for the clock bridge's threads (SCHED_FIFO 10 output, 5 input): allowed, bounded.
  t.same(setting('RestrictRealtime'), ['no'], 'RestrictRealtime=no: the output thread may run SCHED_FIFO');
  t.same(setting('LimitRTPRIO'), ['15'], 'LimitRTPRIO=15: the engine\'s control_priority (the default), above the output thread\'s 10, and no higher');
  t.same(setting('LimitRTTIME'), ['200ms:1s'], 'LimitRTTIME=200ms:1s: SIGXCPU (the guard demotes the thread) at 200 ms, SIGKILL at 1 s');
  const rt = filters.findIndex((f) => f.split(/\s+/).includes('sched_setscheduler'));
  t.ok(rt > deny, 'sched_setscheduler (pthread_setschedparam; in @resources) put back after the ~ line');
  t.ok(filters[rt]?.split(/\s+/).includes('setrlimit'), 'setrlimit too (the element lowers RLIMIT_RTTIME)');
  const install = readFileSync(path.join(ROOT, 'scripts', 'install-service.sh'), 'utf8');
  const etcMode = /^chmod (0\d{3}) "\$DESTDIR\$ETC"$/m.exec(install)?.[1];
  t.same(setting('ConfigurationDirectoryMode'), [etcMode], `ConfigurationDirectoryMode is the mode install-service.sh gives /etc/audio-engine (${String(etcMode)})`);
  t.same(setting('MemoryDenyWriteExecute'), [], 'not MemoryDenyWriteExecute: it breaks V8');
  t.match(setting('ExecStart')[0], '/opt/audio-engine/dist/audio-engine.mjs --config /etc/audio-engine/config.toml');
});

void t.test('readiness: systemd-notify --ready once the engine is up, only under systemd', async (t) => {
  const root = t.testdir(); // one folder per test (a second t.testdir() would empty it)
  const bin = path.join(root, 'bin');
  mkdirSync(bin);
  const calls = path.join(bin, 'calls.txt');
  const fake = path.join(bin, 'systemd-notify');
  writeFileSync(fake, `#!/bin/sh\necho "$NOTIFY_SOCKET $*" >> "${calls}"\n`);
  chmodSync(fake, 0o755);
  const env = { PATH: `${bin}:${process.env.PATH ?? ''}` };
  const engine = await startEngine(t, { env: { ...env, NOTIFY_SOCKET: '/run/test/notify' }, dir: path.join(root, 'one') });
  const line = await eventually(() => (existsSync(calls) ? readFileSync(calls, 'utf8') : undefined), 5000, 'the notify call');
  t.match(line, /^\/run\/test\/notify --ready --pid=\d+ --status=ready: 0 pipeline\(s\), 0 station\(s\)/);
  t.match(line, `--pid=${String(engine.process.pid)}`, 'MAINPID is the engine');
  t.ok(engine.logs.findIndex((l) => l.event === 'ready') >= 0, 'after the servers listen');

  const engine2 = await startEngine(t, { env: { ...env, NOTIFY_SOCKET: '' }, dir: path.join(root, 'two') });
  t.ok(engine2.logs.some((l) => l.event === 'restored'));
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.equal(readFileSync(calls, 'utf8').trim().split('\n').length, 1, 'no call without NOTIFY_SOCKET');
});
