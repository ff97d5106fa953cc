// The overview: one compact row per pipeline and station (name, input on air, input and output
// level bars with peak hold, short-term loudness against the target, alarms in words), alarmed
// rows first, filters by name and alarm, arrow keys to move and Enter to open a row's tile.
// Meters move by `transform` on the same elements frame after frame (no width, no re-layout);
// their figures in words (the loudness text, each bar's title and accessible value) change at
// most every TEXT_MS; a row whose drawing would not change is not rendered again (RowView).
import { Component } from 'preact';
import { ALARMS, severityOf } from './alarms.js';
import { html } from './html.js';

/** The figures in words change at most this often (the bars move on every frame). */
export const TEXT_MS = 500;

/** A peak stays this long, then falls at FALL_DB_PER_S. */
const HOLD_MS = 2000;
const FALL_DB_PER_S = 20;
const FLOOR_DB = -60;

/** Peak hold per meter (`kind:id|in`, `kind:id|out`), fed once per frame. */
export class PeakHold {
  constructor() {
    this.held = new Map();
  }

  /** The held peak of `key` after `value` (dB, or null: no signal) arrived at `now` (ms). */
  update(key, value, now) {
    const prev = this.held.get(key);
    const fallen = prev === undefined ? FLOOR_DB : prev.db - (Math.max(0, now - prev.at - HOLD_MS) / 1000) * FALL_DB_PER_S;
    if (value !== null && value >= fallen) {
      this.held.set(key, { db: value, at: now });
      return value;
    }
    return Math.max(FLOOR_DB, fallen);
  }

  /** Forgets meters whose rows are gone. */
  keep(keys) {
    for (const key of this.held.keys()) if (!keys.has(key.slice(0, key.lastIndexOf('|')))) this.held.delete(key);
  }
}

const signal = (v) => (typeof v === 'number' && Number.isFinite(v) && v > -99 ? v : null);
const max = (values) => values.reduce((m, v) => (signal(v) !== null && (m === null || v > m) ? v : m), null);

/** What a row's meters show: input RMS and peak (dBFS, loudest channel), output momentary loudness, short-term against the target. */
export function metersOf(tile) {
  const level = tile.level;
  const l = tile.loudness;
  return {
    inRms: level === null ? null : max(level.rms_db),
    inPeak: level === null ? null : max(level.peak_db),
    outM: l === null ? null : signal(l.momentary),
    shortTerm: l === null ? null : signal(l.short_term),
    target: l?.target ?? null,
  };
}

/** The input on air as the row shows it: the failover's, or for a plain pipeline main while audio comes. */
function onAir(tile) {
  if (tile.failover !== null) return tile.failover.active_input ?? 'unknown';
  const v = tile.view;
  if (v.state !== 'running') return 'none';
  return v.input_state === 'receiving' || v.input_state === 'silent' ? 'main' : 'none';
}

const ON_AIR = { main: ['●', 'MAIN'], backup: ['◆', 'BACKUP'], fallback: ['▲', 'FALLBACK'], none: ['○', 'NONE'], unknown: ['?', '–'] };
const SEVERITY_SYMBOL = { alarm: '✖', warning: '⚠' };
const STATE_SYMBOL = { running: '●', starting: '◐', backoff: '↻', failed: '✖', stopped: '■', stopping: '◑' };

const fraction = (db) => (db === null ? 0 : Math.min(1, Math.max(0, (db - FLOOR_DB) / -FLOOR_DB)));

/** The transforms of a bar's fill and peak mark, rounded to what the 12 px bar can show. */
const fillOf = (db) => `scaleX(${fraction(db).toFixed(3)})`;
const holdOf = (hold) => `translateX(${(100 * fraction(hold)).toFixed(1)}%)`;

/**
 * Figures in words, refreshed at most every TEXT_MS per row (`key`): what a row's texts show,
 * {inRms, inHold, outM, outHold, shortTerm, target}. A row's first figures are shown at once.
 */
export class TextClock {
  constructor() {
    this.shown = new Map();
  }

  figures(key, meters, holds, now) {
    const prev = this.shown.get(key);
    if (prev !== undefined && now - prev.at < TEXT_MS) return prev.figures;
    const figures = { inRms: meters.inRms, inHold: holds.in, outM: meters.outM, outHold: holds.out, shortTerm: meters.shortTerm, target: meters.target };
    this.shown.set(key, { at: now, figures });
    return figures;
  }

  /** Forgets rows that are gone. */
  keep(keys) {
    for (const key of this.shown.keys()) if (!keys.has(key)) this.shown.delete(key);
  }
}

function Bar({ label, db, hold, text: figures, unit }) {
  const text = figures.db === null ? 'no signal' : `${figures.db.toFixed(1)} ${unit}, peak ${figures.hold.toFixed(1)}`;
  return html`<span class="ov-meter">
    <span class="ov-meter-label" aria-hidden="true">${label}</span>
    <span class="ov-bar" role="meter" aria-label=${`${label} level`} aria-valuemin=${FLOOR_DB} aria-valuemax="0"
      aria-valuenow=${figures.db === null ? FLOOR_DB : Math.round(figures.db)} aria-valuetext=${text} title=${text}>
      <span class="ov-fill" style=${{ transform: fillOf(db) }}></span>
      <span class="ov-hold" style=${{ transform: holdOf(hold) }}></span>
    </span>
  </span>`;
}

function Loudness({ meters }) {
  if (meters.shortTerm === null) return html`<span class="ov-loud" data-testid="ov-short-term">S –</span>`;
  const target = meters.target ?? -23;
  const lu = meters.shortTerm - target;
  const over = lu > 1;
  return html`<span class=${`ov-loud${over ? ' over' : ''}`} data-testid="ov-short-term" data-value=${meters.shortTerm}
    title=${`short-term ${meters.shortTerm.toFixed(1)} LUFS, target ${target} LUFS`}>
    S ${meters.shortTerm.toFixed(1)} <small>${lu >= 0 ? '+' : '−'}${Math.abs(lu).toFixed(1)} LU${over ? ' ▲' : ''}</small></span>`;
}

function Status({ alarms, view }) {
  if (alarms.length === 0) {
    const state = String(view.state ?? 'unknown');
    return html`<span class="ov-status ok" data-testid="ov-status"><span aria-hidden="true">${STATE_SYMBOL[state] ?? '?'}</span> ${state === 'running' ? 'OK' : state}</span>`;
  }
  return html`<span class="ov-status" data-testid="ov-status">${alarms.map((a, i) => html`${i > 0 ? ' · ' : ''}<span class=${`ov-alarm ${a.severity}`} data-code=${a.code}><span aria-hidden="true">${SEVERITY_SYMBOL[a.severity]}</span> ${a.text}</span>`)}</span>`;
}

function Row({ row, holds, text, onOpen, onKey }) {
  const { tile, alarms } = row;
  const v = tile.view;
  const severity = severityOf(alarms);
  const air = onAir(tile);
  const [symbol, word] = ON_AIR[air];
  const name = v.name ?? tile.id;
  const label = `${name}${tile.kind === 'station' ? ' (station)' : ''}: on air ${word}; ${alarms.length === 0 ? 'no alarm' : alarms.map((a) => a.text).join('; ')}`;
  return html`<li class=${`ov-row sev-${severity}`} data-key=${row.key} data-id=${tile.id} data-kind=${tile.kind} data-severity=${severity}
      tabindex="0" aria-label=${label} onClick=${() => onOpen(row.key)} onKeyDown=${(e) => onKey(e, row.key)}>
    <span class="ov-name" title=${`${name} · ${tile.id}`}>${tile.kind === 'station' ? html`<span class="ov-kind">ST</span> ` : ''}${name}</span>
    <span class=${`ov-air air-${air}`} data-testid="ov-on-air" data-input=${air}><span aria-hidden="true">${symbol}</span> ${word}</span>
    <${Bar} label="IN" db=${row.meters.inRms} hold=${holds.in} text=${{ db: text.inRms, hold: text.inHold }} unit="dBFS" />
    <${Bar} label="OUT" db=${row.meters.outM} hold=${holds.out} text=${{ db: text.outM, hold: text.outHold }} unit="LUFS" />
    <${Loudness} meters=${text} />
    <${Status} alarms=${alarms} view=${v} />
  </li>`;
}

/** What a row draws, as one string: the row is rendered again only when it changes. */
function drawingOf(row, holds, text) {
  const v = row.tile.view;
  return [
    row.name, row.tile.kind, v.state, onAir(row.tile), row.alarms.map((a) => `${a.severity}:${a.code}:${a.text}`).join(';'),
    fillOf(row.meters.inRms), holdOf(holds.in), fillOf(row.meters.outM), holdOf(holds.out),
    text.inRms, text.inHold, text.outM, text.outHold, text.shortTerm, text.target,
  ].join('|');
}

/** A row that renders only when its drawing changed (48 rows at 10 Hz: most frames change only some bars). */
class RowView extends Component {
  shouldComponentUpdate(next) {
    return next.drawing !== this.props.drawing;
  }

  render(props) {
    return html`<${Row} ...${props} />`;
  }
}

/** The filter bar: name text and alarm kind (every kind, or only rows with an alarm). */
function Filters({ filter, onFilter, shown, total }) {
  return html`<div class="ov-filters" role="search">
    <label class="check">Name <input type="search" value=${filter.text} placeholder="filter by name" aria-label="filter by name"
      onInput=${(e) => onFilter({ text: e.currentTarget.value })} /></label>
    <label class="check">Alarm <select value=${filter.alarm} aria-label="filter by alarm" onChange=${(e) => onFilter({ alarm: e.currentTarget.value })}>
      <option value="all">all rows</option>
      <option value="any">any alarm or warning</option>
      ${Object.entries(ALARMS).map(([code, a]) => html`<option key=${code} value=${code}>${a.label}</option>`)}
    </select></label>
    <span class="counts">${shown === total ? `${total} rows` : `${shown} of ${total} rows`} · ↑↓←→ move, Enter opens, Esc returns</span>
  </div>`;
}

/**
 * The overview list. `rows` are sorted and filtered already ({key, tile, alarms, meters}); `holds`
 * the peak hold per row key ({in, out}); `texts` a TextClock; `onOpen(key)` opens a row's tile.
 */
export function Overview({ rows, total, holds, texts, now, filter, onFilter, onOpen }) {
  const onKey = (event, key) => {
    const list = event.currentTarget.parentElement;
    const items = [...list.children];
    const at = items.findIndex((el) => el.dataset.key === key);
    const columns = getComputedStyle(list).gridTemplateColumns.split(' ').filter((c) => c !== '').length || 1;
    const move = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: columns, ArrowUp: -columns, Home: -at, End: items.length - 1 - at }[event.key];
    if (move !== undefined) {
      event.preventDefault();
      items[Math.min(items.length - 1, Math.max(0, at + move))]?.focus();
    } else if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      onOpen(key);
    }
  };
  return html`<section class="overview" aria-label="overview">
    <${Filters} filter=${filter} onFilter=${onFilter} shown=${rows.length} total=${total} />
    ${rows.length === 0 && html`<p class="note">No row matches the filter.</p>`}
    <ol class="ov-list" data-testid="overview">
      ${rows.map((row) => {
        const held = holds.get(row.key) ?? { in: FLOOR_DB, out: FLOOR_DB };
        const text = texts.figures(row.key, row.meters, held, now);
        return html`<${RowView} key=${row.key} row=${row} holds=${held} text=${text} drawing=${drawingOf(row, held, text)} onOpen=${onOpen} onKey=${onKey} />`;
      })}
    </ol>
  </section>`;
}
