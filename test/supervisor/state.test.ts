import t from 'tap';
import { MIN_CLEAN_RUN_MS, NO_DATA_RESTART_SPACING_MS, noDataRestartDelay, transition } from '../../src/supervisor/state.js';

const retry = { kind: 'retry', reason: 'x' } as const;

void t.test('a wanted pipeline starts, runs and restarts by exit class', async (t) => {
  t.same(transition('stopped', 'run', { type: 'spawn' }), { state: 'starting', action: { do: 'spawn' } });
  t.same(transition('starting', 'run', { type: 'ready' }), { state: 'running', action: { do: 'none' } });
  t.same(transition('running', 'run', { type: 'exit', class: { kind: 'clean' }, ranMs: 5000 }), { state: 'exited', action: { do: 'spawn' } });
  t.same(
    transition('running', 'run', { type: 'exit', class: { kind: 'clean' }, ranMs: MIN_CLEAN_RUN_MS - 1 }),
    { state: 'backoff', action: { do: 'schedule-retry' } },
    'an instant clean exit backs off instead of spinning',
  );
  t.same(transition('running', 'run', { type: 'exit', class: retry, ranMs: 10 }), { state: 'backoff', action: { do: 'schedule-retry' } });
  t.same(transition('starting', 'run', { type: 'exit', class: { kind: 'permanent', reason: 'x' }, ranMs: 10 }), { state: 'failed', action: { do: 'none' } });
  t.same(transition('backoff', 'run', { type: 'retry-due' }), { state: 'starting', action: { do: 'spawn' } });
});

void t.test('stop wins over everything', async (t) => {
  t.same(transition('running', 'stop', { type: 'stop' }), { state: 'stopping', action: { do: 'signal-stop' } });
  t.same(transition('starting', 'stop', { type: 'stop' }), { state: 'stopping', action: { do: 'signal-stop' } });
  t.same(transition('backoff', 'stop', { type: 'stop' }), { state: 'stopped', action: { do: 'cancel-retry' } });
  t.same(transition('failed', 'stop', { type: 'stop' }), { state: 'stopped', action: { do: 'none' } });
  t.same(transition('stopping', 'stop', { type: 'exit', class: retry, ranMs: 10 }), { state: 'stopped', action: { do: 'none' } });
  t.same(transition('backoff', 'stop', { type: 'retry-due' }), { state: 'backoff', action: { do: 'none' } }, 'a late timer does not start a stopped pipeline');
  t.same(transition('stopping', 'stop', { type: 'stop' }), { state: 'stopping', action: { do: 'none' } });
});

void t.test('a failed pipeline is not started again by a spawn event', async (t) => {
  t.same(transition('failed', 'run', { type: 'spawn' }), { state: 'failed', action: { do: 'none' } });
  t.same(transition('running', 'run', { type: 'ready' }), { state: 'running', action: { do: 'none' } });
});

void t.test('a source that sent no audio restarts soon, spaced, without back-off', async (t) => {
  const noData = { kind: 'no-data', reason: 'x' } as const;
  t.same(transition('running', 'run', { type: 'exit', class: noData, ranMs: 7000 }), { state: 'exited', action: { do: 'schedule-restart', afterMs: 0 } });
  t.same(transition('starting', 'run', { type: 'exit', class: noData, ranMs: 300 }), { state: 'exited', action: { do: 'schedule-restart', afterMs: NO_DATA_RESTART_SPACING_MS - 300 } });
  t.equal(noDataRestartDelay(0), NO_DATA_RESTART_SPACING_MS, 'an instant end waits the whole spacing: never a tight loop');
  t.equal(noDataRestartDelay(-5), NO_DATA_RESTART_SPACING_MS);
  t.same(transition('exited', 'run', { type: 'retry-due' }), { state: 'starting', action: { do: 'spawn' } });
  t.same(transition('exited', 'stop', { type: 'stop' }), { state: 'stopped', action: { do: 'cancel-retry' } }, 'a stop cancels the pending restart');
  t.same(transition('exited', 'stop', { type: 'retry-due' }), { state: 'exited', action: { do: 'none' } });
  t.same(transition('stopping', 'stop', { type: 'exit', class: noData, ranMs: 10 }), { state: 'stopped', action: { do: 'none' } });
});

void t.test('a pipeline loaded before the engine can start children waits in pending', async (t) => {
  t.same(transition('stopped', 'run', { type: 'hold' }), { state: 'pending', action: { do: 'none' } });
  t.same(transition('running', 'run', { type: 'hold' }), { state: 'running', action: { do: 'none' } }, 'hold never touches a child');
  t.same(transition('pending', 'run', { type: 'spawn' }), { state: 'starting', action: { do: 'spawn' } });
  t.same(transition('pending', 'stop', { type: 'stop' }), { state: 'stopped', action: { do: 'none' } }, 'deleted before its first child: nothing to end');
  t.same(transition('pending', 'run', { type: 'ready' }), { state: 'pending', action: { do: 'none' } });
  t.same(transition('pending', 'run', { type: 'retry-due' }), { state: 'pending', action: { do: 'none' } });
  t.same(transition('pending', 'run', { type: 'exit', class: { kind: 'clean' }, ranMs: 5000 }), { state: 'stopped', action: { do: 'none' } });
});
