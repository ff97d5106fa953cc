// What is wrong with a pipeline or station, in words, derived from the fields the live feed
// already carries (a Tile: view, loudness, level, transport, failover, stats_age_ms). Pure: no
// DOM, no imports, so that it runs in the browser and under tap alike (test/dashboard/alarms.test.ts).

/** Statistics older than this (ms) make a running child's row stale (as the tile's STALE flag). */
export const STALE_MS = 2000;

/**
 * Every alarm the overview knows, in the order of the filter's list: its severity (`alarm`: the
 * programme is hurt or about to be; `warning`: it is on air but something needs a look) and the
 * label the filter shows.
 */
export const ALARMS = {
  failed: { severity: 'alarm', label: 'failed' },
  restarting: { severity: 'alarm', label: 'restarting' },
  'nothing-on-air': { severity: 'alarm', label: 'nothing on air' },
  'input-lost': { severity: 'alarm', label: 'input lost' },
  silence: { severity: 'alarm', label: 'silence on air' },
  behind: { severity: 'alarm', label: 'behind real time' },
  'leg-failed': { severity: 'alarm', label: 'output leg failed' },
  'on-backup': { severity: 'warning', label: 'on backup' },
  'on-fallback': { severity: 'warning', label: 'on fallback file' },
  'backup-lost': { severity: 'warning', label: 'backup input lost' },
  latency: { severity: 'warning', label: 'latency above target' },
  stale: { severity: 'warning', label: 'no statistics' },
  'waiting-capacity': { severity: 'warning', label: 'waiting for capacity' },
  ptp: { severity: 'warning', label: 'PTP not locked' },
};

const SEVERITY_RANK = { alarm: 0, warning: 1, ok: 2 };
const LEG_LABEL = { primary: 'LEG 1', redundant: 'LEG 2 (2022-7)' };

const seconds = (s) => `${Math.round(s)} s`;
const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

function make(code, text, sinceMs) {
  return { code, severity: ALARMS[code].severity, text, since_ms: sinceMs };
}

/**
 * The alarms of one tile as of `now` (ms since the epoch): [{code, severity, text, since_ms}],
 * `since_ms` the engine's own time the condition began when its view says (state_since, the
 * silence's length), else null. `frameAge` is how old the page's newest frame is (ms);
 * `silenceAlertS` the engine's [dashboard] silence_alert_s.
 */
export function alarmsOf(tile, { now, frameAge = 0, silenceAlertS = 10 }) {
  const v = tile.view ?? {};
  const out = [];
  const stateSince = typeof v.state_since === 'string' ? Date.parse(v.state_since) : null;
  const state = v.state;
  const restarts = num(v.restarts) ?? 0;
  if (state === 'failed') {
    out.push(make('failed', `FAILED${typeof v.last_error === 'string' && v.last_error !== '' ? `: ${v.last_error}` : ''}`, stateSince));
  } else if (state === 'backoff' || ((state === 'starting' || state === 'stopping') && restarts > 0)) {
    const retry = state === 'backoff' && typeof v.next_retry_at === 'string' ? Math.max(0, Math.ceil((Date.parse(v.next_retry_at) - now) / 1000)) : null;
    out.push(make('restarting', `RESTARTING (restart ${restarts}${retry === null ? '' : `, retry in ${retry} s`})`, stateSince));
  } else if (state === 'waiting_for_capacity') {
    out.push(make('waiting-capacity', 'WAITING FOR CAPACITY', stateSince));
  }
  if (state !== 'running') return out;

  const sinceState = stateSince === null ? null : now - stateSince;
  const statsAge = tile.stats_age_ms === null || tile.stats_age_ms === undefined ? sinceState : tile.stats_age_ms + frameAge;
  if (statsAge !== null && statsAge > STALE_MS) out.push(make('stale', `NO STATISTICS FOR ${seconds(statsAge / 1000)}`, null));

  const silence = num(v.silence_seconds) ?? 0;
  const silenceSince = now - silence * 1000;
  const f = tile.failover ?? null;
  if (f !== null && f.active_input !== null) {
    if (f.active_input === 'none') out.push(make('nothing-on-air', 'NOTHING ON AIR', null));
    else if (f.active_input === 'backup') out.push(make('on-backup', 'ON BACKUP', null));
    else if (f.active_input === 'fallback') out.push(make('on-fallback', 'ON FALLBACK FILE', null));
    if (f.main !== null && !f.main.connected) {
      out.push(make('input-lost', `MAIN INPUT LOST${f.main.silent_seconds > 0 ? ` ${seconds(f.main.silent_seconds)}` : ''}`, null));
    }
    if (f.backup !== null && !f.backup.connected) out.push(make('backup-lost', 'BACKUP INPUT LOST', null));
  } else if (f === null && v.input_state === 'waiting') {
    out.push(make('input-lost', `INPUT LOST${silence > 0 ? ` ${seconds(silence)}` : ''}`, silenceSince));
  }
  if (v.input_state === 'silent' && silence >= silenceAlertS) out.push(make('silence', `SILENCE ON AIR ${seconds(silence)}`, silenceSince));

  if (v.behind === true) {
    const ratio = num(v.realtime_ratio);
    out.push(make('behind', `BEHIND REAL TIME${ratio === null ? '' : ` (×${ratio.toFixed(2)})`}`, null));
  }
  const clock = v.clock;
  if (clock !== null && typeof clock === 'object') {
    const fill = num(clock.jitter_buffer_seconds);
    const setpoint = num(clock.jitter_setpoint_seconds);
    const target = num(clock.jitter_target_seconds);
    // The bridge keeps its fill at the setpoint; a fill more than one target above it is latency the operator did not ask for.
    if (fill !== null && setpoint !== null && target !== null && fill - setpoint > Math.max(target, 0.02)) {
      out.push(make('latency', `LATENCY +${Math.round((fill - setpoint) * 1000)} ms OVER TARGET`, null));
    }
  }
  for (const leg of Array.isArray(v.output_legs) ? v.output_legs : []) {
    if (leg.state === 'failed') out.push(make('leg-failed', `OUTPUT ${LEG_LABEL[leg.leg] ?? String(leg.leg).toUpperCase()} FAILED${leg.error ? `: ${leg.error}` : ''}`, null));
  }
  return out;
}

/** The host's own alarms (not a row's): PTP not locked, from `{state, reason}` when the feed carries it. */
export function hostAlarms({ ptp } = {}) {
  if (ptp === null || ptp === undefined || ptp.state === 'locked') return [];
  return [make('ptp', `PTP ${String(ptp.state).toUpperCase()}${ptp.reason ? `: ${ptp.reason}` : ''}`, null)];
}

/** `alarm` if any alarm is, else `warning` if any, else `ok`. */
export function severityOf(alarms) {
  if (alarms.some((a) => a.severity === 'alarm')) return 'alarm';
  return alarms.length > 0 ? 'warning' : 'ok';
}

/** An alarm that ends and comes back within this long keeps its first onset (a flapping alarm does not jump to the top). */
export const LATCH_MS = 10_000;

/**
 * Fixes when the page first saw each alarm of each row (key `kind:id`), so that the order does
 * not jitter from frame to frame: `onsets` (a Map kept by the caller) gets `key|code` ->
 * {at, endedAt}, `at` the engine's `since_ms` when it gives one, else `now`; an alarm that ended
 * is forgotten LATCH_MS later. Returns the row's newest onset among its alarms of its worst
 * severity (null without alarms).
 */
export function trackOnsets(onsets, key, alarms, now) {
  const live = new Set(alarms.map((a) => `${key}|${a.code}`));
  for (const [k, entry] of onsets) {
    if (!k.startsWith(`${key}|`) || live.has(k)) continue;
    entry.endedAt ??= now;
    if (now - entry.endedAt > LATCH_MS) onsets.delete(k);
  }
  const worst = severityOf(alarms);
  let newest = null;
  for (const a of alarms) {
    const k = `${key}|${a.code}`;
    const entry = onsets.get(k) ?? { at: a.since_ms ?? now, endedAt: null };
    entry.endedAt = null;
    onsets.set(k, entry);
    if (a.severity === worst && (newest === null || entry.at > newest)) newest = entry.at;
  }
  return newest;
}

/**
 * Rows in the order the overview shows them: alarms first, then warnings, then the rest; within
 * a severity the newest onset first (what just went wrong is on top); then by name. A row is
 * `{key, name, alarms, onset}`.
 */
export function sortRows(rows) {
  return [...rows].sort((a, b) => {
    const s = SEVERITY_RANK[severityOf(a.alarms)] - SEVERITY_RANK[severityOf(b.alarms)];
    if (s !== 0) return s;
    const ta = a.onset ?? 0;
    const tb = b.onset ?? 0;
    if (ta !== tb) return tb - ta;
    return a.name.localeCompare(b.name) || a.key.localeCompare(b.key);
  });
}

/**
 * The rows a filter leaves: `text` matches the name or id (case-insensitive), `alarm` is `all`,
 * `any` (rows with an alarm or warning) or one alarm code.
 */
export function filterRows(rows, { text = '', alarm = 'all' } = {}) {
  const needle = text.trim().toLowerCase();
  return rows.filter((row) => {
    if (needle !== '' && !row.name.toLowerCase().includes(needle) && !row.key.toLowerCase().includes(needle)) return false;
    if (alarm === 'all') return true;
    if (alarm === 'any') return row.alarms.length > 0;
    return row.alarms.some((a) => a.code === alarm);
  });
}

/** How many rows are in alarm and in warning (a row counts once, by its worst). */
export function countAlarms(rows) {
  let alarm = 0;
  let warning = 0;
  for (const row of rows) {
    const s = severityOf(row.alarms);
    if (s === 'alarm') alarm += 1;
    else if (s === 'warning') warning += 1;
  }
  return { alarm, warning, total: alarm + warning };
}
