import t from 'tap';
import { OVERLOAD_STALL_FACTOR, watchdogVerdict, type WatchdogTick } from '../../src/supervisor/watchdog.js';

// ticks every second, a child that must post statistics at least every 5 s
const tick = (over: Partial<WatchdogTick>): WatchdogTick => ({
  now: 100_000, previousTick: 99_000, periodMs: 1000, lastProgressAt: 99_500, stallAfterMs: 5000, hostOverloaded: false, ...over,
});

void t.test('a child that posts statistics is fine', async (t) => {
  t.same(watchdogVerdict(tick({})), { kind: 'fine' });
  t.same(watchdogVerdict(tick({ lastProgressAt: 95_001 })), { kind: 'fine' }, 'just under the bound');
});

void t.test('a child silent for the bound is stalled, on a tick that came on time', async (t) => {
  t.same(watchdogVerdict(tick({ lastProgressAt: 95_000 })), { kind: 'stalled', silentMs: 5000 });
  t.same(watchdogVerdict(tick({ lastProgressAt: 93_300, previousTick: 98_500 })), { kind: 'stalled', silentMs: 6700 },
    'a tick up to a period late still judges');
});

void t.test('while the host is overloaded the bound is longer', async (t) => {
  t.same(watchdogVerdict(tick({ lastProgressAt: 90_000, hostOverloaded: true })), { kind: 'fine' });
  t.same(watchdogVerdict(tick({ lastProgressAt: 100_000 - 5000 * OVERLOAD_STALL_FACTOR, hostOverloaded: true })),
    { kind: 'stalled', silentMs: 5000 * OVERLOAD_STALL_FACTOR });
});

void t.test('a tick late by more than a period does not judge: the engine was held up, not the child', async (t) => {
  // the engine ran nothing for 6.7 s: the child's lines of that time are still in its pipe
  t.same(watchdogVerdict(tick({ previousTick: 93_300, lastProgressAt: 93_000 })), { kind: 'engine-late', lateMs: 5700 });
  // the next tick, on time, judges: the pipe was read in between (here: still nothing)
  t.same(watchdogVerdict(tick({ now: 101_000, previousTick: 100_000, lastProgressAt: 93_000 })), { kind: 'stalled', silentMs: 8000 });
  // ... or the child's statistics were there
  t.same(watchdogVerdict(tick({ now: 101_000, previousTick: 100_000, lastProgressAt: 100_400 })), { kind: 'fine' });
});
