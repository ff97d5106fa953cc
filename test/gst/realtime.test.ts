/**
 * Why the children's output threads do not run real time, read from the engine's own process
 * (src/gst/realtime.ts), on captured /proc texts (test/fixtures/proc/README.md), so the outcome
 * does not depend on this machine's /proc; and the /health warning built from it (REST, gRPC).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Fastify from 'fastify';
import t from 'tap';
import { healthToProto } from '../../src/grpc/to-proto.js';
import { limitOf, readOwnProcess, realtimeRefusal, realtimeRefused, realtimeWarning, type OwnProcess } from '../../src/gst/realtime.js';
import { EngineHealth, healthWarnings } from '../../src/health.js';
import { healthRoutes } from '../../src/http/routes/health.js';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/proc');
const fixture = (name: string): string => readFileSync(path.join(dir, name), 'utf8');
/** The engine under the shipped unit in the nspawn-booted container: RLIMIT_RTPRIO 0, seccomp, no capability. */
const unit: OwnProcess = { limits: fixture('nspawn-unit-engine.limits'), status: fixture('nspawn-unit-engine.status') };
/** A root shell here: RLIMIT_RTPRIO 0 but CAP_SYS_NICE, no seccomp filter. */
const root: OwnProcess = { limits: fixture('root-shell.limits'), status: fixture('root-shell.status') };
const withRtprio = (own: OwnProcess, soft: string, hard: string): OwnProcess => ({
  ...own,
  limits: own.limits?.replace(/^Max realtime priority .*$/m, `Max realtime priority     ${soft.padEnd(21)}${hard.padEnd(21)}`),
});

void t.test('limits of /proc/PID/limits by name', async (t) => {
  t.same(limitOf(unit.limits ?? '', 'Max realtime priority'), { soft: 0, hard: 0 });
  t.same(limitOf(unit.limits ?? '', 'Max realtime timeout'), { soft: 200_000, hard: 200_000 }, 'LimitRTTIME=200ms, in µs');
  t.same(limitOf(unit.limits ?? '', 'Max cpu time'), { soft: Number.POSITIVE_INFINITY, hard: Number.POSITIVE_INFINITY }, 'unlimited');
  t.equal(limitOf(unit.limits ?? '', 'Max nothing'), undefined, 'no such line');
  t.equal(limitOf('Max realtime priority     x     0\n', 'Max realtime priority'), undefined, 'not a number');
});

void t.test('why SCHED_FIFO 10 is refused, from the engine\'s own limits, capabilities and filter', async (t) => {
  t.equal(
    realtimeRefusal(unit),
    "the engine's RLIMIT_RTPRIO is 0 (hard 0), below the output thread's priority 10: no limit of 10 was granted (the unit's LimitRTPRIO: a service manager without CAP_SYS_RESOURCE, as in a container, cannot raise the hard limit) and the engine has no CAP_SYS_NICE",
    'the unit in the container: the limit was not granted',
  );
  t.match(realtimeRefusal(withRtprio(unit, '5', '10')), /RLIMIT_RTPRIO is 5 \(hard 10\), below the output thread's priority 10: the soft limit is below the hard one/, 'a soft limit below a hard one that would do');
  t.equal(
    realtimeRefusal(withRtprio(unit, '10', '10')),
    "the engine's RLIMIT_RTPRIO is 10, so its system call filter refused it (a systemd unit's RestrictRealtime=yes, or sched_setscheduler not allowed)",
    'the limit granted, a seccomp filter: the unit restricts it',
  );
  t.match(realtimeRefusal(withRtprio(unit, 'unlimited', 'unlimited')), /RLIMIT_RTPRIO is unlimited, so its system call filter refused it/);
  t.equal(
    realtimeRefusal(root),
    'the engine has CAP_SYS_NICE and it has no system call filter: the kernel refused it (the cgroup\'s real-time budget, cpu.rt_runtime_us)',
    'CAP_SYS_NICE makes RLIMIT_RTPRIO 0 no reason',
  );
  t.match(realtimeRefusal(withRtprio({ limits: root.limits, status: undefined }, '10', '10')), /RLIMIT_RTPRIO is 10 and it has no system call filter: the kernel refused it/, 'no status: no capability, no filter known');
  t.equal(realtimeRefusal({ limits: undefined, status: unit.status }), "the engine's RLIMIT_RTPRIO is unknown (/proc/self/limits unreadable)");
  t.match(realtimeRefusal({ limits: 'garbage', status: 'garbage' }), /RLIMIT_RTPRIO is unknown/);
});

void t.test('the warning stands while pipelines run and none\'s output thread runs real time', async (t) => {
  let reads = 0;
  const own = (): OwnProcess => {
    reads += 1;
    return unit;
  };
  t.equal(realtimeRefused([], own), undefined, 'nothing runs');
  t.equal(realtimeRefused([null, undefined], own), undefined, 'nothing said yet (before the first report, or an element that does not say)');
  t.equal(realtimeRefused([false, true, false], own), undefined, 'one runs real time');
  t.equal(reads, 0, 'the process is read only when the warning stands');
  const refused = realtimeRefused([false, null, false], own);
  t.same(refused, { pipelines: 2, reason: realtimeRefusal(unit) }, 'two running pipelines said no, one did not say');
  t.equal(reads, 1);
  if (refused === undefined) return;
  t.equal(
    realtimeWarning(refused),
    `no pipeline's output thread runs real-time (2 running; SCHED_FIFO 10 refused: ${realtimeRefusal(unit)})`,
  );
});

void t.test('/health and GetHealth: a warning with the reason; the status stays healthy', async (t) => {
  const refused = { pipelines: 1, reason: realtimeRefusal(unit) };
  let current: typeof refused | undefined = refused;
  const health = new EngineHealth('1.2.3', 0, async () => ({ ok: true, missing: [], reason: undefined }), () => 60_000, () => [], () => undefined, () => current);
  const report = await health.report();
  t.equal(report.status, 'healthy');
  t.same(report.realtime_refused, refused);
  t.same(healthWarnings(report), [realtimeWarning(refused)]);
  const ptp = { state: 'unavailable' as const, grandmaster_id: null, domain: null, offset_seconds: null, port_states: [], clock_id: null, reason: 'no ptp4l' };
  t.match(healthWarnings(report, ptp), [/^ptp unavailable: /, /^no pipeline's output thread runs real-time \(1 running; SCHED_FIFO 10 refused: the engine's RLIMIT_RTPRIO is 0/], 'after the PTP warning');
  t.same(healthToProto(report).warnings, [realtimeWarning(refused)], 'GetHealth carries the same warning');

  const app = Fastify();
  t.teardown(() => app.close());
  await app.register(healthRoutes(health));
  const answer = await app.inject({ method: 'GET', url: '/health' });
  t.equal(answer.statusCode, 200, 'a warning, not a failure');
  t.same(answer.json(), { status: 'healthy', version: '1.2.3', uptime: '0h 1m', realtime_refused: refused, warnings: [realtimeWarning(refused)] }, 'REST: realtime_refused and the warning');

  current = undefined;
  const quiet = await app.inject({ method: 'GET', url: '/api/v1/health' });
  t.same(quiet.json(), { status: 'healthy', version: '1.2.3', uptime: '0h 1m' }, 'none of it once a pipeline runs real time (or none runs)');
});

void t.test('readOwnProcess reads this process\'s texts', { skip: process.platform === 'linux' ? false : 'Linux /proc only' }, async (t) => {
  const own = readOwnProcess();
  t.ok(limitOf(own.limits ?? '', 'Max realtime priority') !== undefined, 'its RLIMIT_RTPRIO line');
  t.match(own.status, /^Seccomp:\s+\d/m, 'its seccomp mode');
  t.type(realtimeRefusal(own), 'string', 'a reason whatever this machine grants');
});
