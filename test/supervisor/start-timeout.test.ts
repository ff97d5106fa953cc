/**
 * The supervisor with real gst-launch-1.0 children that never reach PLAYING: a station's stdin
 * graph whose source sent nothing (gst-launch 1.22 hangs after "pipeline doesn't want to
 * preroll") and one whose source never sends (it waits in PREROLLING for ever).
 */
import { pino } from 'pino';
import t, { type Test } from 'tap';
import { compilePipeline } from '../../src/compiler/compile.js';
import { gstEnvironment } from '../../src/gst/environment.js';
import { DEFAULT_BACKOFF } from '../../src/supervisor/backoff.js';
import { launchChild } from '../../src/process/child.js';
import { ChildSupervisor, type RuntimeInfo, type SupervisorDeps } from '../../src/supervisor/child-supervisor.js';
import { eventually, isAlive } from '../helpers/engine-process.js';

const READY_TIMEOUT_MS = 2000;

function supervisor(t: Test, readyTimeoutMs = READY_TIMEOUT_MS): ChildSupervisor {
  const stateDir = t.testdir();
  const gst = gstEnvironment(stateDir, process.env);
  const deps: SupervisorDeps = {
    launch: launchChild,
    command: gst.launchCommand,
    env: gst.env,
    log: pino({ level: 'silent' }),
    backoff: DEFAULT_BACKOFF,
    random: () => 0.5,
    now: Date.now,
    stopBounds: { eosMs: 500, termMs: 500 },
    logLines: 200,
    statsIntervalMs: 1000,
    stallAfterMs: 5000,
    readyTimeoutMs,
    prerollExitMs: 1000,
  };
  const args = compilePipeline(
    { input: { type: 'stdin' }, processing: [], output: { type: 'rtp', host: '127.0.0.1', port: 9, ttl: 16, channels: 2, encoding: 'L24', ptime: 1, payload_type: 96, dscp: 34 } },
    { statsIntervalMs: 1000, packetsPerSend: 1, clockSource: 'tai', jitterMs: 20 },
  );
  const sup = new ChildSupervisor('station:test', { argv: args }, deps, { stdin: true });
  t.teardown(() => sup.stop());
  return sup;
}

/** Polls the supervisor every 50 ms until `test` holds, recording every state seen. */
async function watch(sup: ChildSupervisor, seen: Set<string>, test: (s: RuntimeInfo) => boolean, what: string, ms = 15_000): Promise<RuntimeInfo> {
  return eventually(() => {
    const s = sup.snapshot();
    seen.add(s.state);
    return test(s) ? s : undefined;
  }, ms, what);
}

void t.test('a source that sent nothing: the hung child is killed and restarted soon, without back-off', async (t) => {
  // The engine's own bound (10 s): under load, the child may need more than 2 s to see the end of its input.
  const sup = supervisor(t, 10_000);
  sup.start();
  const seen = new Set<string>();
  const first = await watch(sup, seen, (s) => s.state === 'starting' && s.pid !== null, 'a child');
  const input = sup.input();
  t.ok(input !== undefined, 'the child takes a source');
  input?.end(); // the source leaves without sending a byte
  const next = await watch(sup, seen, (s) => s.restarts === 1 && s.pid !== null && s.pid !== first.pid, 'the next child');
  t.match(next.last_error, /source ended before sending any audio/);
  // gst-launch hangs after the preroll failure in some runs (killed 1 s later), exits 1 in others.
  t.ok(next.exit_signal === 'SIGKILL' || next.exit_code === 1, `it ended either way (code ${String(next.exit_code)}, signal ${String(next.exit_signal)})`);
  t.comment(next.exit_signal === 'SIGKILL' ? 'this run: the child hung and was killed' : 'this run: the child exited by itself');
  t.notOk(seen.has('backoff'), `no back-off (states seen: ${[...seen].join(', ')})`);
  t.notOk(isAlive(first.pid ?? -1), 'the first child is gone');
  t.ok(sup.logs(200).some((l) => /doesn't want to preroll/.test(l)), 'the preroll failure is in the child log');
});

void t.test('a child that does not reach PLAYING in time is killed, restarted, and reported', async (t) => {
  const sup = supervisor(t);
  sup.start();
  const seen = new Set<string>();
  const first = await watch(sup, seen, (s) => s.state === 'starting' && s.pid !== null, 'a child');
  const input = sup.input(); // a source connects, then sends nothing and stays
  t.ok(input !== undefined);
  if (input !== undefined) sup.inputTaken(input);
  const took = Date.now();
  const failed = await watch(sup, seen, (s) => s.state === 'backoff', 'back-off after the kill', 20_000);
  t.ok(Date.now() - took >= 2 * READY_TIMEOUT_MS - 100, `killed after twice the bound (a stdin child; ${Date.now() - took} ms)`);
  t.equal(failed.last_error, 'did not reach PLAYING within 4 s: killed and restarted');
  t.equal(failed.restarts, 1);
  t.notOk(isAlive(first.pid ?? -1), 'the child is gone');
  const next = await watch(sup, seen, (s) => s.state === 'starting' && s.pid !== null && s.pid !== first.pid, 'the next child');
  t.ok(next.pid !== null, 'a new child waits for the next source');
});
