/**
 * The overview's alarms (src/dashboard/public/alarms.js): each derived from the fields a tile
 * carries, in words; rows sorted alarms first, newest first; filters; counts.
 */
import t from 'tap';
import type { Tile } from '../../src/dashboard/live-feed.js';
import { alarmsOf, countAlarms, filterRows, hostAlarms, LATCH_MS, severityOf, sortRows, trackOnsets, type Row } from '../../src/dashboard/public/alarms.js';

const NOW = Date.parse('2030-01-01T00:00:00Z');

function tile(view: Record<string, unknown>, extra: Partial<Tile> = {}): Tile {
  return {
    kind: 'pipeline',
    id: 'pl_1',
    view: { name: 'one', state: 'running', state_since: new Date(NOW - 60_000).toISOString(), restarts: 0, input_state: 'receiving', silence_seconds: 0, ...view },
    loudness: null,
    level: null,
    transport: null,
    failover: null,
    stats_age_ms: 50,
    ...extra,
  };
}

const codes = (x: Tile, silenceAlertS = 10): string[] => alarmsOf(x, { now: NOW, silenceAlertS }).map((a) => a.code);
const texts = (x: Tile): string[] => alarmsOf(x, { now: NOW }).map((a) => a.text);

void t.test('a healthy running pipeline has no alarm', async (t) => {
  t.same(alarmsOf(tile({}), { now: NOW }), []);
  t.equal(severityOf([]), 'ok');
});

void t.test('each condition of the view gives its alarm, in words', async (t) => {
  t.same(texts(tile({ input_state: 'waiting', silence_seconds: 12.4 })), ['INPUT LOST 12 s'], 'input lost, at once (the engine holds 2 s already)');
  t.same(codes(tile({ input_state: 'silent', silence_seconds: 9 })), [], 'silence shorter than silence_alert_s is not an alarm');
  t.same(texts(tile({ input_state: 'silent', silence_seconds: 11 })), ['SILENCE ON AIR 11 s']);
  t.same(codes(tile({ input_state: 'silent', silence_seconds: 4 }), 3), ['silence'], 'the engine\'s silence_alert_s is the threshold');
  t.same(texts(tile({ behind: true, realtime_ratio: 0.93 })), ['BEHIND REAL TIME (×0.93)']);
  t.same(texts(tile({ state: 'failed', last_error: 'no such element' })), ['FAILED: no such element']);
  t.same(texts(tile({ state: 'backoff', restarts: 3, next_retry_at: new Date(NOW + 4200).toISOString() })), ['RESTARTING (restart 3, retry in 5 s)']);
  t.same(codes(tile({ state: 'starting', restarts: 0 })), [], 'a first start is not a restart');
  t.same(codes(tile({ state: 'starting', restarts: 2 })), ['restarting']);
  t.same(codes(tile({ state: 'waiting_for_capacity' })), ['waiting-capacity']);
  t.same(texts(tile({ output_legs: [{ leg: 'primary', state: 'sending', error: null }, { leg: 'redundant', state: 'failed', error: 'Network is unreachable' }] })),
    ['OUTPUT LEG 2 (2022-7) FAILED: Network is unreachable']);
  t.same(texts(tile({ clock: { jitter_buffer_seconds: 0.2, jitter_setpoint_seconds: 0.055, jitter_target_seconds: 0.05 } })), ['LATENCY +145 ms OVER TARGET']);
  t.same(codes(tile({ clock: { jitter_buffer_seconds: 0.07, jitter_setpoint_seconds: 0.055, jitter_target_seconds: 0.05 } })), [], 'within one target of the setpoint');
  t.same(texts(tile({}, { stats_age_ms: 4000 })), ['NO STATISTICS FOR 4 s']);
  t.same(codes(tile({ state: 'stopped', input_state: 'waiting' })), [], 'a stopped pipeline has no input alarm');
});

void t.test('failover: the input on air and each input\'s health', async (t) => {
  const f = (active: 'main' | 'backup' | 'fallback' | 'none' | null, mainUp: boolean, backupUp = true): Tile => tile({ input_state: 'receiving' }, {
    failover: {
      active_input: active, selection: 'auto', available: ['main', 'backup'],
      main: { connected: mainUp, level_dbfs: mainUp ? -14 : null, silent_seconds: mainUp ? 0 : 7 },
      backup: { connected: backupUp, level_dbfs: -20, silent_seconds: 0 },
    },
  });
  t.same(codes(f('main', true)), []);
  t.same(texts(f('backup', false)), ['ON BACKUP', 'MAIN INPUT LOST 7 s']);
  t.equal(severityOf(alarmsOf(f('backup', false), { now: NOW })), 'alarm', 'main lost is an alarm even with the backup on air');
  t.same(codes(f('fallback', false, false)), ['on-fallback', 'input-lost', 'backup-lost']);
  t.same(codes(f('none', false, false)), ['nothing-on-air', 'input-lost', 'backup-lost']);
  t.same(codes(f(null, false, false)), [], 'nothing before the child\'s first report');
  t.same(codes(f('main', true, false)), ['backup-lost']);
  t.equal(severityOf(alarmsOf(f('main', true, false), { now: NOW })), 'warning');
});

void t.test('PTP is the host\'s alarm', async (t) => {
  t.same(hostAlarms({ ptp: { state: 'locked' } }), []);
  t.same(hostAlarms({}), [], 'none when the feed does not carry PTP');
  t.same(hostAlarms({ ptp: { state: 'unlocked', reason: 'port state LISTENING' } }).map((a) => a.text), ['PTP UNLOCKED: port state LISTENING']);
});

void t.test('rows: alarms first, newest onset first, a fixed onset per alarm, filters, counts', async (t) => {
  const onsets = new Map<string, { at: number; endedAt: number | null }>();
  const row = (key: string, name: string, x: Tile, now = NOW): Row => {
    const alarms = alarmsOf(x, { now });
    return { key, name, alarms, onset: trackOnsets(onsets, key, alarms, now) };
  };
  const rows = [
    row('pipeline:a', 'Alpha', tile({})),
    row('pipeline:b', 'Bravo', tile({ input_state: 'waiting', silence_seconds: 300 })),
    row('pipeline:c', 'Charlie', tile({ behind: true })),
    row('pipeline:d', 'Delta', tile({ input_state: 'waiting', silence_seconds: 2 })),
    row('pipeline:e', 'Echo', tile({ output_legs: [] }, { stats_age_ms: 5000 })),
  ];
  t.same(sortRows(rows).map((r) => r.name), ['Charlie', 'Delta', 'Bravo', 'Echo', 'Alpha'],
    'alarms newest first (behind: first seen now; input lost 2 s ago; 300 s ago), then the warning, then the healthy row');
  t.equal(onsets.get('pipeline:b|input-lost')?.at, NOW - 300_000, 'the onset of an input loss is the engine\'s silence length');
  // A later frame: Bravo's silence grew; its onset stays, the order does not change.
  const later = row('pipeline:b', 'Bravo', tile({ input_state: 'waiting', silence_seconds: 301.3 }), NOW + 1000);
  t.equal(later.onset, NOW - 300_000, 'the onset is kept from frame to frame');
  row('pipeline:b', 'Bravo', tile({}), NOW + 2000);
  const back = row('pipeline:b', 'Bravo', tile({ input_state: 'waiting', silence_seconds: 1 }), NOW + 2000 + LATCH_MS);
  t.equal(back.onset, NOW - 300_000, 'an alarm back within LATCH_MS keeps its first onset (flapping does not jump to the top)');
  row('pipeline:b', 'Bravo', tile({}), NOW + 3000 + LATCH_MS);
  row('pipeline:b', 'Bravo', tile({}), NOW + 3001 + 2 * LATCH_MS);
  t.notOk(onsets.has('pipeline:b|input-lost'), 'an alarm ended for longer than LATCH_MS is forgotten');

  t.same(filterRows(rows, { text: 'ha' }).map((r) => r.name), ['Alpha', 'Charlie'], 'by name, any case');
  t.same(filterRows(rows, { text: 'PIPELINE:E' }).map((r) => r.name), ['Echo'], 'or by id');
  t.same(filterRows(rows, { alarm: 'any' }).map((r) => r.name), ['Bravo', 'Charlie', 'Delta', 'Echo']);
  t.same(filterRows(rows, { alarm: 'input-lost' }).map((r) => r.name), ['Bravo', 'Delta']);
  t.same(countAlarms(rows), { alarm: 3, warning: 1, total: 4 });
});
