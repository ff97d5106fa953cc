// Meters drawn as plain elements (role="meter", with the value as text beside every bar):
// loudness on the EBU +9 scale around the target, true peak against its ceiling, L/R levels.
import { html } from './html.js';

const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));
const pct = (v, lo, hi) => `${(100 * (clamp(v, lo, hi) - lo)) / (hi - lo)}%`;
export const fmt = (v, digits = 1) => (typeof v === 'number' && Number.isFinite(v) && v > -99 ? v.toFixed(digits) : '–');
const signed = (v) => (v > 0 ? `+${v.toFixed(1)}` : v.toFixed(1));

/** A momentary or short-term loudness bar: EBU +9 scale, -18 .. +9 LU around the target. */
export function LoudnessBar({ label, value, target, testid }) {
  const lo = target - 18;
  const hi = target + 9;
  const has = typeof value === 'number' && value > -99;
  const lu = has ? value - target : null;
  const over = lu !== null && lu > 1;
  const text = has ? `${fmt(value)} LUFS (${signed(lu)} LU)` : 'no signal';
  return html`
    <div class="meter-row">
      <span class="meter-label">${label}</span>
      <div class="bar ebu" role="meter" aria-label=${`${label} loudness`} aria-valuemin=${lo} aria-valuemax=${hi}
           aria-valuenow=${has ? value : lo} aria-valuetext=${text}>
        <div class=${`fill${over ? ' over' : ''}`} style=${{ width: has ? pct(value, lo, hi) : '0%' }}></div>
        <div class="mark target" style=${{ left: pct(target, lo, hi) }} title="target"></div>
        <div class="tick" style=${{ left: pct(target - 9, lo, hi) }}></div>
      </div>
      <span class="meter-value" data-testid=${testid} data-value=${has ? value : ''}>${text}${over ? ' ▲' : ''}</span>
    </div>`;
}

/** The EBU +9 scale's labels under the bars. */
export function EbuScale({ target }) {
  const lo = target - 18;
  const hi = target + 9;
  return html`
    <div class="meter-row scale" aria-hidden="true">
      <span class="meter-label"></span>
      <div class="scale-labels">
        ${[-18, -9, 0, 9].map((lu) => html`<span style=${{ left: pct(target + lu, lo, hi) }}>${lu === 0 ? `0 (${target})` : lu > 0 ? `+${lu}` : String(lu)}</span>`)}
      </div>
      <span class="meter-value"><small>LU (EBU +9)</small></span>
    </div>`;
}

/** True peak, -30 .. +3 dBTP, with the ceiling marked. */
export function TruePeakBar({ value, ceiling }) {
  const lo = -30;
  const hi = 3;
  const has = typeof value === 'number' && value > -99;
  const over = has && ceiling !== null && value > ceiling + 0.05;
  const text = has ? `${fmt(value)} dBTP` : '–';
  return html`
    <div class="meter-row">
      <span class="meter-label">TP</span>
      <div class="bar" role="meter" aria-label="true peak" aria-valuemin=${lo} aria-valuemax=${hi}
           aria-valuenow=${has ? value : lo} aria-valuetext=${`${text}, ceiling ${fmt(ceiling)} dBTP`}>
        <div class=${`fill${over ? ' over' : ''}`} style=${{ width: has ? pct(value, lo, hi) : '0%' }}></div>
        ${ceiling !== null && html`<div class="mark ceiling" style=${{ left: pct(ceiling, lo, hi) }} title=${`ceiling ${ceiling} dBTP`}></div>`}
      </div>
      <span class="meter-value">${text}${over ? ' ▲ over ceiling' : ''} <small>ceiling ${fmt(ceiling)}</small></span>
    </div>`;
}

/** One channel's RMS level, -60 .. 0 dBFS, with its peak as a tick. */
export function LevelBar({ label, rms, peak }) {
  const lo = -60;
  const hi = 0;
  const has = typeof rms === 'number' && rms > -99;
  return html`
    <div class="meter-row">
      <span class="meter-label">${label}</span>
      <div class="bar level" role="meter" aria-label=${`${label} level`} aria-valuemin=${lo} aria-valuemax=${hi}
           aria-valuenow=${has ? rms : lo} aria-valuetext=${has ? `${fmt(rms)} dBFS RMS` : 'no signal'}>
        <div class="fill" style=${{ width: has ? pct(rms, lo, hi) : '0%' }}></div>
        ${typeof peak === 'number' && peak > -99 && html`<div class="mark peak" style=${{ left: pct(peak, lo, hi) }}></div>`}
      </div>
      <span class="meter-value">${has ? `${fmt(rms)} dBFS` : '–'}</span>
    </div>`;
}
