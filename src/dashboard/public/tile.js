// One pipeline's or station's tile: state and why, input and SRT link, output, meters, history,
// controls. Colours never carry meaning alone: every state has a symbol and a word.
import { useState } from 'preact/hooks';
import { STALE_MS } from './alarms.js';
import { api } from './api.js';
import { CreatePipeline, Message, SettingsEditor } from './forms.js';
import { HistoryPlot } from './history.js';
import { html } from './html.js';
import { EbuScale, fmt, LevelBar, LoudnessBar, TruePeakBar } from './meters.js';

export { STALE_MS };
/** LRA needs about a minute of programme before it means much. */
const LRA_SETTLE_S = 60;

const STATE_SYMBOL = { running: '●', starting: '◐', backoff: '↻', failed: '✖', stopped: '■', stopping: '◑' };

/** Fields every tile shows in its own place; any other scalar field appears under "More". */
const KNOWN = new Set([
  'id', 'name', 'status', 'state', 'pid', 'restarts', 'last_error', 'exit_code', 'exit_signal', 'state_since', 'next_retry_at',
  'created_at', 'input', 'processing', 'output', 'input_state', 'silence_seconds', 'srt_connected', 'number', 'harbor',
  'harbor_port', 'latency', 'autostart', 'enabled', 'source', 'output_legs', 'active_input', 'selection', 'inputs', 'backup', 'fallback', 'failover',
]);

const LEG_SYMBOL = { sending: '●', failed: '✖', idle: '■', off: '○' };
const LEG_LABEL = { primary: 'Leg 1', redundant: 'Leg 2 (2022-7)' };

/**
 * The output's legs, each with its destination, interface and state: shown for an ST 2022-7
 * output (two legs) and for any leg that failed (its sends fail while the child goes on).
 */
function OutputLegs({ legs }) {
  if (!Array.isArray(legs) || (legs.length < 2 && !legs.some((l) => l.state === 'failed'))) return null;
  return legs.map((leg) => html`<div key=${leg.leg}><dt>${LEG_LABEL[leg.leg] ?? leg.leg}</dt>
    <dd data-testid=${`leg-${leg.leg}`} class=${`leg leg-${leg.state}`}><span aria-hidden="true">${LEG_SYMBOL[leg.state] ?? '?'}</span> ${`${leg.state} · ${leg.host}:${leg.port}`}${leg.interface ? ` on ${leg.interface}` : ''}${leg.error ? html` · <span class="leg-error">${leg.error}</span>` : ''}</dd></div>`);
}

/** The input on air: a colour (style.css), a symbol and a word each. */
const ON_AIR = {
  main: { symbol: '●', word: 'MAIN', note: 'main input on air' },
  backup: { symbol: '◆', word: 'BACKUP', note: 'backup input on air' },
  fallback: { symbol: '▲', word: 'FALLBACK', note: 'fallback file on air' },
  none: { symbol: '○', word: 'NONE', note: 'nothing audible on air' },
  unknown: { symbol: '?', word: '–', note: 'no report from the child yet' },
};
const INPUT_LABEL = { main: 'Main', backup: 'Backup', fallback: 'Fallback' };

function secondsUntil(iso, now) {
  if (typeof iso !== 'string') return null;
  return Math.max(0, Math.ceil((Date.parse(iso) - now) / 1000));
}

/** 75 -> "1 min 15 s". */
function duration(s) {
  const whole = Math.max(0, Math.round(s));
  const h = Math.floor(whole / 3600);
  const m = Math.floor((whole % 3600) / 60);
  const sec = whole % 60;
  return h > 0 ? `${h} h ${m} min` : m > 0 ? `${m} min ${sec} s` : `${sec} s`;
}

function StateBadge({ view, now }) {
  const state = String(view.state ?? 'unknown');
  const retry = state === 'backoff' ? secondsUntil(view.next_retry_at, now) : null;
  return html`<span class=${`badge state-${state}`} data-testid="state">
    <span aria-hidden="true">${STATE_SYMBOL[state] ?? '?'}</span> ${state}${retry !== null ? ` · retry in ${retry} s` : ''}</span>`;
}

function Why({ view }) {
  const parts = [];
  if (typeof view.restarts === 'number' && view.restarts > 0) parts.push(html`<span>restarts ${view.restarts}</span>`);
  if (typeof view.pid === 'number') parts.push(html`<span data-testid="pid">pid ${view.pid}</span>`);
  return html`<div class="why">
    ${parts}
    ${typeof view.last_error === 'string' && view.last_error !== '' && html`<p class="last-error"><strong>Last error:</strong> ${view.last_error}</p>`}
  </div>`;
}

function InputLine({ tile }) {
  const v = tile.view;
  const srt = tile.transport?.srt ?? null;
  const lost = srt ? srt.packetsLost : null;
  const total = srt ? srt.packetsReceived + srt.packetsLost : 0;
  const port = v.input?.port ?? v.harbor_port;
  const kind = v.harbor === 'icecast' ? 'Icecast' : 'SRT';
  return html`<dl class="facts">
    <div><dt>Input</dt><dd data-testid="input-state">${v.input_state ?? '–'}${typeof v.silence_seconds === 'number' && v.silence_seconds > 0 ? ` · silent ${Math.round(v.silence_seconds)} s` : ''}</dd></div>
    <div><dt>${kind}</dt><dd>:${port ?? '–'}${srt && srt.connected ? html` · RTT ${fmt(srt.rttMs)} ms · loss ${lost} (${total > 0 ? fmt((100 * lost) / total, 2) : '0.00'} %) · ${fmt(srt.receiveRateMbps, 2)} Mb/s` : v.source ? ` · ${v.source.peer ?? 'source connected'}` : ' · no caller'}</dd></div>
    <div><dt>Output</dt><dd>${v.output?.host ?? '–'}:${v.output?.port ?? '–'} · ${tile.transport?.output_packets_per_s ?? '–'} pkt/s</dd></div>
    <${OutputLegs} legs=${v.output_legs} />
    ${typeof tile.transport?.buffer_fill === 'number' && html`<div><dt>Buffer</dt><dd>${Math.round(tile.transport.buffer_fill * 100)} %</dd></div>`}
    ${Object.entries(v).filter(([k, x]) => !KNOWN.has(k) && x !== null && ['string', 'number', 'boolean'].includes(typeof x)).map(([k, x]) =>
      html`<div key=${k}><dt>${k.replace(/_/g, ' ')}</dt><dd>${String(x)}</dd></div>`)}
  </dl>`;
}

/** One SRT input's state in words: "● −14.2 dBFS", "✖ no audio", "◌ silent 12 s". */
function inputState(figures) {
  if (figures === null) return '–';
  if (!figures.connected) return `✖ no audio${figures.silent_seconds > 0 ? ` · ${Math.round(figures.silent_seconds)} s` : ''}`;
  const level = figures.level_dbfs === null ? '' : `${fmt(figures.level_dbfs)} dBFS`;
  if (figures.silent_seconds > 0) return `◌ silent ${Math.round(figures.silent_seconds)} s${level === '' ? '' : ` · ${level}`}`;
  return `● ${level === '' ? 'audio' : level}`;
}

/** Which input is on air, each input's state, and the buttons to force one or return to auto. */
function OnAir({ tile }) {
  const [message, setMessage] = useState(null);
  const f = tile.failover;
  if (f === null) return null;
  const key = f.active_input ?? 'unknown';
  const shown = ON_AIR[key];
  const select = async (choice) => {
    setMessage(null);
    const label = choice === 'auto' ? 'Auto' : `Force ${choice}`;
    try {
      await api('POST', `/api/v1/pipelines/${tile.id}/input`, { select: choice });
      setMessage({ kind: 'ok', text: `${label}: done.` });
    } catch (error) {
      setMessage({ kind: 'error', text: `${label}: ${error.message}` });
    }
  };
  return html`<section class=${`on-air input-${key}`} aria-label="input on air" data-testid="on-air" data-input=${key} data-selection=${f.selection}>
    <div class="on-air-line">
      <span class="on-air-badge" data-testid="on-air-badge" title=${shown.note}><span aria-hidden="true">${shown.symbol}</span> ON AIR: ${shown.word}</span>
      <span class="selection" data-testid="selection">${f.selection === 'auto' ? 'auto' : html`<strong>⚑ forced by hand</strong>`}</span>
    </div>
    <dl class="facts inputs">
      <div><dt>Main</dt><dd data-testid="input-main">${inputState(f.main)}</dd></div>
      ${f.available.includes('backup') && html`<div><dt>Backup</dt><dd data-testid="input-backup">${inputState(f.backup)}</dd></div>`}
      ${f.available.includes('fallback') && html`<div><dt>Fallback</dt><dd>file${tile.view.fallback?.loop === false ? '' : ', looped'}</dd></div>`}
    </dl>
    <div class="actions" role="group" aria-label="choose the input on air">
      <button type="button" class="small" aria-pressed=${f.selection === 'auto'} onClick=${() => select('auto')}
        title="Let the failover policy choose (loss, silence, return)">Auto</button>
      ${f.available.map((input) => html`<button type="button" class="small" key=${input} aria-pressed=${f.selection === input}
        onClick=${() => select(input)} title=${`Put the ${input} input on air and keep it there`}>Force ${INPUT_LABEL[input].toLowerCase()}</button>`)}
    </div>
    <${Message} message=${message} />
  </section>`;
}

function Meters({ tile, stale }) {
  const l = tile.loudness;
  const level = tile.level;
  const target = l?.target ?? -23;
  return html`<section class=${`meters${stale ? ' stale' : ''}`} aria-label="meters">
    ${l === null
      ? html`<p class="note">${(tile.view.processing ?? []).some((s) => s.plugin === 'loudness-normalize')
          ? 'No loudness report from this child yet (no audio since it started).'
          : 'No loudness step: levels only.'}</p>`
      : html`
        <${LoudnessBar} label="M" value=${l.momentary} target=${target} testid="momentary" />
        <${LoudnessBar} label="S" value=${l.short_term} target=${target} testid="short-term" />
        <${EbuScale} target=${target} />
        <dl class="numbers">
          <div><dt>I</dt><dd data-testid="integrated">${fmt(l.integrated)} LUFS <span class="since" data-testid="measured">over ${duration(l.measuring_s)}</span></dd></div>
          <div><dt>LRA</dt><dd data-testid="lra">${fmt(l.lra)} LU${l.measuring_s < LRA_SETTLE_S ? html` <span class="unstable" title="needs 60 s of programme">(settling, ${l.measuring_s} s)</span>` : ''}</dd></div>
          <div><dt>Gain</dt><dd data-testid="gain">${l.gain > 0 ? '+' : ''}${fmt(l.gain)} dB</dd></div>
          <div><dt>In S / I</dt><dd>${fmt(l.input_short_term)} / ${fmt(l.input_integrated)} LUFS</dd></div>
        </dl>
        <${TruePeakBar} value=${l.true_peak} ceiling=${l.ceiling} />`}
    ${level !== null && level.rms_db.map((rms, i) => html`<${LevelBar} key=${i} label=${level.rms_db.length === 2 ? (i === 0 ? 'L' : 'R') : `ch${i + 1}`} rms=${rms} peak=${level.peak_db[i]} />`)}
  </section>`;
}

function Controls({ tile, onEdit, editing }) {
  const [message, setMessage] = useState(null);
  const [confirming, setConfirming] = useState(false);
  const run = async (label, method, path) => {
    setMessage(null);
    try {
      await api(method, path);
      setMessage({ kind: 'ok', text: `${label}: done.` });
    } catch (error) {
      setMessage({ kind: 'error', text: `${label}: ${error.message}` });
    }
  };
  const station = `/api/stations/${tile.id}`;
  return html`<div class="controls">
    <div class="actions">
      ${tile.kind === 'station' && html`
        <button type="button" onClick=${() => run('Start', 'POST', `${station}/start`)}>Start</button>
        <button type="button" onClick=${() => run('Stop', 'POST', `${station}/stop`)}>Stop</button>
        <button type="button" onClick=${() => run('Restart', 'POST', `${station}/restart`)}>Restart</button>`}
      <button type="button" aria-expanded=${editing} onClick=${onEdit}>${editing ? 'Close settings' : 'Settings'}</button>
      ${(tile.view.processing ?? []).some((s) => s.plugin === 'loudness-normalize') && html`
        <button type="button" title="Start measuring integrated loudness, LRA and true peak again (the gain is not touched)"
          onClick=${() => run('Reset loudness', 'POST', tile.kind === 'station' ? `${station}/loudness/reset` : `/api/v1/pipelines/${tile.id}/loudness/reset`)}>Reset I / LRA</button>`}
      ${tile.kind === 'pipeline' && html`
        ${confirming
          ? html`<button type="button" class="danger" onClick=${() => { setConfirming(false); void run('Delete', 'DELETE', `/api/v1/pipelines/${tile.id}`); }}>Confirm delete</button>
                 <button type="button" onClick=${() => setConfirming(false)}>Keep</button>`
          : html`<button type="button" onClick=${() => setConfirming(true)}>Delete…</button>`}`}
    </div>
    <${Message} message=${message} />
  </div>`;
}

export function Tile({ tile, frameAge, silenceAlertS, series, version, now }) {
  const [editing, setEditing] = useState(false);
  const v = tile.view;
  const running = v.state === 'running';
  // A new child has sent nothing yet: its age counts from when it entered its state.
  const sinceState = typeof v.state_since === 'string' ? now - Date.parse(v.state_since) : null;
  const statsAge = tile.stats_age_ms === null ? sinceState : tile.stats_age_ms + frameAge;
  const stale = frameAge > STALE_MS || (running && (statsAge === null || statsAge > STALE_MS));
  const meterStale = stale || (tile.loudness !== null && tile.loudness.age_ms + frameAge > STALE_MS);
  const silent = running && typeof v.silence_seconds === 'number' && v.silence_seconds >= silenceAlertS;
  const classes = ['tile', `kind-${tile.kind}`, `state-${v.state}`, stale ? 'is-stale' : '', silent ? 'is-silent' : ''].join(' ');
  const title = typeof v.title === 'string' && v.title !== '' ? v.title : null;
  return html`<article class=${classes} data-id=${tile.id} data-kind=${tile.kind} aria-labelledby=${`h-${tile.kind}-${tile.id}`}>
    <header>
      <h2 id=${`h-${tile.kind}-${tile.id}`}>${v.name ?? tile.id}</h2>
      <span class="id">${tile.kind === 'station' ? `station ${tile.id}` : tile.id}</span>
      <${StateBadge} view=${v} now=${now} />
    </header>
    ${title !== null && html`<p class="now-playing">♪ ${title}</p>`}
    ${stale && html`<p class="flag stale-flag" role="status" data-testid="stale">‖ STALE: no update for ${Math.round((statsAge ?? frameAge) / 1000)} s</p>`}
    ${silent && html`<p class="flag silence-flag" role="status" data-testid="silence">◌ ${v.input_state === 'waiting' ? 'NO INPUT' : 'SILENCE'} ${Math.round(v.silence_seconds)} s</p>`}
    <${OnAir} tile=${tile} />
    <${Why} view=${v} />
    <${InputLine} tile=${tile} />
    <${Meters} tile=${tile} stale=${meterStale} />
    ${series && html`<${HistoryPlot} series=${series} version=${version} target=${tile.loudness?.target ?? -23} label=${`short-term loudness history of ${v.name ?? tile.id}`} />`}
    <${Controls} tile=${tile} editing=${editing} onEdit=${() => setEditing(!editing)} />
    ${editing && html`<${SettingsEditor} tile=${tile} />`}
  </article>`;
}

export { CreatePipeline };
