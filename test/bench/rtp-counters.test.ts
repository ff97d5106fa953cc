/**
 * The scale bench's counter when the host starves it: a command it does not answer in time is a
 * CounterUnanswered (the sweep judges that step not real time and goes on, bench/engine.ts), not
 * any other error; the step's figures are then not measured. The counter here is a stand-in that
 * says hello and then never answers, as a starved one does.
 */
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { CounterUnanswered, RtpCounters } from '../../bench/engine-harness.js';
import { COUNTER_UNANSWERED_REASON, sweepEnd, sweepSideBySide, unmeasuredFigures } from '../../bench/scale-window.js';

void t.test('a counter that stops answering is CounterUnanswered, and stops when told', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'audio-engine-test-counter-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const silent = path.join(dir, 'silent-counter');
  // hello with its N ports, then reads its commands and answers none; ends when stdin closes
  await writeFile(silent, '#!/bin/sh\necho \'{"ports":[40001],"rcvbuf":0,"nice":0}\'\nwhile read -r line; do :; done\n');
  await chmod(silent, 0o755);
  const counters = await RtpCounters.start(silent, 1, 300);
  t.teardown(() => counters.stop());
  t.same(counters.ports, [40001]);
  const error = await counters.reset().then(() => undefined, (e: unknown) => e);
  t.ok(error instanceof CounterUnanswered, `reset: ${String(error)}`);
  t.match(String(error), /rtp-counter did not answer in 300 ms/);
  t.ok(await counters.snapshot().then(() => false, (e: unknown) => e instanceof CounterUnanswered), 'and every command after it');
  await counters.stop();
  t.ok(counters.child.exitCode !== null || counters.child.signalCode !== null, 'the counter has ended');
});

void t.test('a counter that exits is an error of its own, not CounterUnanswered', async (t) => {
  const counters = await RtpCounters.start(process.execPath, 1, 300).catch((e: unknown) => e);
  t.notOk(counters instanceof CounterUnanswered, 'node as a counter prints no hello: a start error');
  t.ok(counters instanceof Error);
});

void t.test('an unmeasured step is judged not real time, its figures n/a, and ends its kind of the sweep', async (t) => {
  const step = unmeasuredFigures(52, '1.0 0.5 0.2');
  t.equal(step.realTime, false);
  t.same(step.reasons, [COUNTER_UNANSWERED_REASON]);
  t.ok(Number.isNaN(step.pipelineCpuPct.median) && Number.isNaN(step.rtp.minRatePerS) && Number.isNaN(step.accountedPctOfMachine));
  t.equal((JSON.parse(JSON.stringify(step)) as { pipelineCpuPct: { median: unknown } }).pipelineCpuPct.median, null, 'null in the JSON');
  const ok = (n: number): { n: number; realTime: boolean } => ({ n, realTime: true });
  const swept = await sweepSideBySide([48, 52, 56], async (n) => (n < 52 ? ok(n) : unmeasuredFigures(n, '')), async (n) => ok(n));
  t.same(swept.first.map((x) => [x.n, x.realTime]), [[48, true], [52, false]], 'the engine stops at its unmeasured step');
  t.same(swept.second.map((x) => x.n), [48, 52, 56], 'the reference goes on');
  t.same(sweepEnd(swept.first, [48, 52, 56]), { largestRealTimeN: 48, stoppedEarly: true });
});
