// The operator's page: login (when auth is on), then every pipeline and station live from one
// event stream, redrawn on each frame (10 Hz) and twice a second without one (to show staleness).
// Two views: the tiles, and the overview (one row each, alarms first; the default above
// OVERVIEW_ABOVE rows). The view, the open row and the filters live in the URL's hash.
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { alarmsOf, countAlarms, filterRows, sortRows, trackOnsets } from './alarms.js';
import { api, session } from './api.js';
import { withViews } from './frames.js';
import { html } from './html.js';
import { metersOf, Overview, PeakHold, TextClock } from './overview.js';
import { openStream } from './stream.js';
import { CreatePipeline, STALE_MS, Tile } from './tile.js';

const HISTORY_POINTS = 600;
/** More pipelines and stations than this: the overview is the default view. */
export const OVERVIEW_ABOVE = 12;

const state = {
  phase: 'probe', // probe | login | live
  loginError: null,
  connection: 'connecting', // connecting | live | lost
  hello: null,
  tiles: [],
  /** `kind:id` -> the tile's view: a frame carries a view only when it changed (frames.js). */
  views: new Map(),
  frameAt: 0,
  /** key -> { t: [s], s: [LUFS|null], version } */
  history: new Map(),
  closeStream: null,
  /** `kind:id|code` -> {at, endedAt}: when the page first saw that alarm (alarms.js trackOnsets). */
  onsets: new Map(),
  peaks: new PeakHold(),
  /** The overview's figures in words, refreshed at most twice a second per row. */
  texts: new TextClock(),
  /** `kind:id` -> {in, out}: the held peaks of the row's meters as of the last frame. */
  holds: new Map(),
  /** The row whose tile is open (focus returns to it), and whether opening it added a history entry. */
  returnTo: undefined,
  pushedOpen: false,
};

/** The hash: view (overview | tiles; absent: by count), open (`kind:id` whose tile is shown over the overview), q, alarm. */
function route() {
  const p = new URLSearchParams(window.location.hash.slice(1));
  return { view: p.get('view'), open: p.get('open'), text: p.get('q') ?? '', alarm: p.get('alarm') ?? 'all' };
}

/** Changes the hash: a new history entry when `push` (opening a row: Back closes it), else in place. */
function navigate(patch, push) {
  const p = new URLSearchParams(window.location.hash.slice(1));
  for (const [k, v] of Object.entries(patch)) {
    if (v === null || v === '' || (k === 'alarm' && v === 'all')) p.delete(k);
    else p.set(k, v);
  }
  const hash = `#${p.toString()}`;
  if (push) window.location.hash = hash;
  else window.history.replaceState(null, '', hash);
  draw();
}

function holdPeaks(tiles, now) {
  const keys = new Set();
  for (const tile of tiles) {
    const key = `${tile.kind}:${tile.id}`;
    keys.add(key);
    const m = metersOf(tile);
    state.holds.set(key, { in: state.peaks.update(`${key}|in`, m.inPeak, now), out: state.peaks.update(`${key}|out`, m.outM, now) });
  }
  state.peaks.keep(keys);
  state.texts.keep(keys);
  for (const key of state.holds.keys()) if (!keys.has(key)) state.holds.delete(key);
}

function addHistory(tiles, t) {
  const second = Math.floor(t / 1000);
  for (const tile of tiles) {
    const key = `${tile.kind}:${tile.id}`;
    let series = state.history.get(key);
    if (series === undefined) {
      series = { t: [], s: [], version: 0 };
      state.history.set(key, series);
    }
    if (series.t.length > 0 && series.t[series.t.length - 1] >= second) continue;
    const l = tile.loudness;
    series.t.push(second);
    series.s.push(l !== null && l.age_ms < STALE_MS && l.short_term > -99 ? l.short_term : null);
    if (series.t.length > HISTORY_POINTS) {
      series.t.shift();
      series.s.shift();
    }
    series.version += 1;
  }
}

function onEvent(name, data) {
  if (name === 'hello') state.hello = data;
  else if (name === 'history') {
    for (const [key, series] of Object.entries(data)) state.history.set(key, { t: [...series.t], s: [...series.s], version: 1 });
  } else if (name === 'tiles') {
    state.tiles = withViews(data.tiles, state.views);
    state.frameAt = Date.now();
    addHistory(state.tiles, data.t);
    holdPeaks(state.tiles, state.frameAt);
  }
  draw();
}

function onStreamState(next) {
  if (next === 'unauthorized') {
    logout('The key is not accepted any more.');
    return;
  }
  state.connection = next;
  draw();
}

function goLive() {
  state.phase = 'live';
  state.closeStream?.();
  state.closeStream = openStream(onEvent, onStreamState);
  draw();
}

function logout(reason) {
  state.closeStream?.();
  state.closeStream = null;
  session.key = '';
  state.tiles = [];
  state.views.clear();
  state.history.clear();
  state.phase = 'login';
  state.loginError = reason;
  draw();
}

/** Whether the engine lets this tab in (with its key, if any): 401 means the login form. */
async function probe() {
  try {
    await api('GET', '/api/stations');
    goLive();
  } catch (error) {
    state.phase = 'login';
    state.loginError = error.status === 401 ? (session.key === '' ? null : 'The key was refused.') : error.message;
    if (error.status === 401) session.key = '';
    draw();
  }
}

function Login() {
  const [key, setKey] = useState('');
  const submit = (event) => {
    event.preventDefault();
    session.key = key.trim();
    state.loginError = null;
    void probe();
  };
  return html`<main class="login">
    <form onSubmit=${submit} aria-labelledby="login-title">
      <h1 id="login-title">audio-engine</h1>
      <p>This engine requires an API key.</p>
      <label class="field"><span>API key</span>
        <input type="password" name="api-key" autocomplete="current-password" required value=${key} onInput=${(e) => setKey(e.currentTarget.value)} autofocus /></label>
      <button type="submit">Sign in</button>
      ${state.loginError !== null && html`<p class="message error" role="alert">✖ ${state.loginError}</p>`}
      <p class="note">The key is kept for this tab only (session storage) and sent in the Authorization header.</p>
    </form>
  </main>`;
}

/** Every tile as an overview row: its alarms, when they began, its meters; sorted alarms first. */
function rowsOf(now, frameAge, silenceAlertS) {
  const keys = new Set();
  const rows = state.tiles.map((tile) => {
    const key = `${tile.kind}:${tile.id}`;
    keys.add(key);
    const alarms = alarmsOf(tile, { now, frameAge, silenceAlertS });
    return { key, name: String(tile.view.name ?? tile.id), tile, alarms, onset: trackOnsets(state.onsets, key, alarms, now), meters: metersOf(tile) };
  });
  for (const k of state.onsets.keys()) if (!keys.has(k.slice(0, k.indexOf('|')))) state.onsets.delete(k);
  return sortRows(rows);
}

function openRow(key) {
  state.returnTo = key;
  state.pushedOpen = true;
  navigate({ open: key }, true);
}

/** Focus back on the row whose tile was open. */
function focusReturn() {
  if (state.returnTo === undefined) return;
  document.querySelector(`.ov-row[data-key="${state.returnTo}"]`)?.focus();
  state.returnTo = undefined;
}

function closeRow() {
  if (route().open === null) return;
  // Opened from the overview: back to that history entry (the browser's Back does the same).
  if (state.pushedOpen) window.history.back();
  else {
    navigate({ open: null }, false);
    focusReturn();
  }
}

/** The tile of one row over the overview (which stays as it was underneath: filters, scroll). */
function Detail({ tile, frameAge, now, silenceAlertS }) {
  const back = useRef(null);
  useEffect(() => back.current?.focus(), []);
  const series = state.history.get(`${tile.kind}:${tile.id}`);
  return html`<div class="detail-backdrop" onClick=${(e) => { if (e.target === e.currentTarget) closeRow(); }}>
    <div class="detail" role="dialog" aria-modal="true" aria-label=${`${tile.view.name ?? tile.id}: detail`} data-testid="detail">
      <button type="button" class="back" data-testid="back" onClick=${closeRow} ref=${back}>← Overview <small>(Esc)</small></button>
      <${Tile} key=${`${tile.kind}:${tile.id}`} tile=${tile} frameAge=${frameAge} now=${now}
        silenceAlertS=${silenceAlertS} series=${series} version=${series?.version ?? 0} />
    </div>
  </div>`;
}

function Dashboard() {
  const now = Date.now();
  const frameAge = state.frameAt === 0 ? 0 : now - state.frameAt;
  const silenceAlertS = state.hello?.silence_alert_s ?? 10;
  const connection = state.connection === 'live' && frameAge > STALE_MS ? 'stalled' : state.connection;
  const pipelines = state.tiles.filter((t) => t.kind === 'pipeline').length;
  const stations = state.tiles.length - pipelines;
  const where = route();
  const view = where.view === 'overview' || where.view === 'tiles' ? where.view : state.tiles.length > OVERVIEW_ABOVE ? 'overview' : 'tiles';
  const rows = rowsOf(now, frameAge, silenceAlertS);
  const count = countAlarms(rows);
  document.title = count.total > 0 ? `(${count.total}) ⚠ audio-engine` : 'audio-engine';
  const opened = view === 'overview' && where.open !== null ? state.tiles.find((t) => `${t.kind}:${t.id}` === where.open) : undefined;
  return html`<div class=${`page view-${view}`}>
    <header class="top">
      <h1>audio-engine <small>${state.hello?.version ?? ''}</small></h1>
      <span class=${`badge conn-${connection}`} role="status" data-testid="connection">
        ${connection === 'live' ? '● live' : connection === 'lost' ? '✖ connection lost, retrying' : connection === 'stalled' ? '‖ no data' : '◐ connecting'}
      </span>
      <span class=${`badge alarm-count${count.alarm > 0 ? ' has-alarm' : count.warning > 0 ? ' has-warning' : ''}`} role="status" data-testid="alarm-count">
        ${count.total === 0 ? '● no alarms' : `${count.alarm > 0 ? '✖' : '⚠'} ${count.total} in alarm${count.warning > 0 && count.alarm > 0 ? ` (${count.warning} warning${count.warning > 1 ? 's' : ''})` : ''}`}
      </span>
      <span class="counts">${pipelines} pipeline(s), ${stations} station(s)</span>
      <button type="button" class="small" data-testid="view-toggle" aria-pressed=${view === 'overview'}
        onClick=${() => navigate({ view: view === 'overview' ? 'tiles' : 'overview', open: null }, false)}>
        ${view === 'overview' ? '▤ Tiles' : '▦ Overview'}</button>
      ${session.key !== '' && html`<button type="button" class="small" onClick=${() => logout(null)}>Sign out</button>`}
    </header>
    <details class="new">
      <summary>New pipeline</summary>
      <${CreatePipeline} />
    </details>
    ${view === 'overview'
      ? html`<${Overview} rows=${filterRows(rows, where)} total=${rows.length} holds=${state.holds} texts=${state.texts} now=${now} filter=${where}
          onFilter=${(patch) => navigate({ ...(patch.text === undefined ? {} : { q: patch.text }), ...(patch.alarm === undefined ? {} : { alarm: patch.alarm }) }, false)}
          onOpen=${openRow} />`
      : html`<main class="tiles">
      ${state.tiles.length === 0 && html`<p class="note">No pipelines or stations yet.</p>`}
      ${state.tiles.map((tile) => {
        const series = state.history.get(`${tile.kind}:${tile.id}`);
        return html`<${Tile} key=${`${tile.kind}:${tile.id}`} tile=${tile} frameAge=${frameAge} now=${now}
          silenceAlertS=${silenceAlertS} series=${series} version=${series?.version ?? 0} />`;
      })}
    </main>`}
    ${opened !== undefined && html`<${Detail} tile=${opened} frameAge=${frameAge} now=${now} silenceAlertS=${silenceAlertS} />`}
  </div>`;
}

function App() {
  if (state.phase === 'probe') return html`<p class="boot">Connecting…</p>`;
  if (state.phase === 'login') return html`<${Login} />`;
  return html`<${Dashboard} />`;
}

const root = document.getElementById('app');
function draw() {
  render(html`<${App} />`, root);
}

setInterval(() => {
  if (state.phase === 'live') draw();
}, 500);
window.addEventListener('hashchange', () => {
  draw();
  // Back from a row's tile (the Back button, Escape or the browser's Back): focus on its row again.
  if (route().open === null) {
    state.pushedOpen = false;
    focusReturn();
  }
});
window.addEventListener('keydown', (event) => {
  if (event.key === 'Escape' && route().open !== null) closeRow();
});
draw();
void probe();
