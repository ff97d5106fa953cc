// The operator's page: login (when auth is on), then every pipeline and station live from one
// event stream, redrawn on each frame (10 Hz) and twice a second without one (to show staleness).
import { render } from 'preact';
import { useState } from 'preact/hooks';
import { api, session } from './api.js';
import { html } from './html.js';
import { openStream } from './stream.js';
import { CreatePipeline, STALE_MS, Tile } from './tile.js';

const HISTORY_POINTS = 600;

const state = {
  phase: 'probe', // probe | login | live
  loginError: null,
  connection: 'connecting', // connecting | live | lost
  hello: null,
  tiles: [],
  frameAt: 0,
  /** key -> { t: [s], s: [LUFS|null], version } */
  history: new Map(),
  closeStream: null,
};

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
    state.tiles = data.tiles;
    state.frameAt = Date.now();
    addHistory(data.tiles, data.t);
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

function Dashboard() {
  const now = Date.now();
  const frameAge = state.frameAt === 0 ? 0 : now - state.frameAt;
  const silenceAlertS = state.hello?.silence_alert_s ?? 10;
  const connection = state.connection === 'live' && frameAge > STALE_MS ? 'stalled' : state.connection;
  const pipelines = state.tiles.filter((t) => t.kind === 'pipeline').length;
  const stations = state.tiles.length - pipelines;
  return html`<div class="page">
    <header class="top">
      <h1>audio-engine <small>${state.hello?.version ?? ''}</small></h1>
      <span class=${`badge conn-${connection}`} role="status" data-testid="connection">
        ${connection === 'live' ? '● live' : connection === 'lost' ? '✖ connection lost, retrying' : connection === 'stalled' ? '‖ no data' : '◐ connecting'}
      </span>
      <span class="counts">${pipelines} pipeline(s), ${stations} station(s)</span>
      ${session.key !== '' && html`<button type="button" class="small" onClick=${() => logout(null)}>Sign out</button>`}
    </header>
    <details class="new">
      <summary>New pipeline</summary>
      <${CreatePipeline} />
    </details>
    <main class="tiles">
      ${state.tiles.length === 0 && html`<p class="note">No pipelines or stations yet.</p>`}
      ${state.tiles.map((tile) => {
        const series = state.history.get(`${tile.kind}:${tile.id}`);
        return html`<${Tile} key=${`${tile.kind}:${tile.id}`} tile=${tile} frameAge=${frameAge} now=${now}
          silenceAlertS=${silenceAlertS} series=${series} version=${series?.version ?? 0} />`;
      })}
    </main>
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
draw();
void probe();
