// Forms that change the engine: create a pipeline, change a pipeline's or a station's name,
// target and EQ. Values go to the API as typed (a number when it reads as one, else the text):
// the engine's one validator judges them and its message, which names the field, is shown.
import { useEffect, useState } from 'preact/hooks';
import { api } from './api.js';
import { html } from './html.js';

export function asNumber(text) {
  const t = String(text).trim();
  if (t === '') return undefined;
  const n = Number(t);
  return Number.isFinite(n) ? n : t;
}

const drop = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

function Field({ label, value, onInput, type = 'text', inputmode, name, size }) {
  return html`<label class="field"><span>${label}</span>
    <input name=${name} type=${type} inputmode=${inputmode} size=${size} value=${value} onInput=${(e) => onInput(e.currentTarget.value)} /></label>`;
}

export function Message({ message }) {
  if (message === null) return null;
  return html`<p class=${`message ${message.kind}`} role=${message.kind === 'error' ? 'alert' : 'status'}>
    ${message.kind === 'error' ? '✖ ' : '✔ '}${message.text}</p>`;
}

/** Rows of EQ bands (freq, gain, Q) with add and remove. */
function BandsEditor({ bands, onChange, idPrefix }) {
  const set = (i, key, value) => onChange(bands.map((b, j) => (j === i ? { ...b, [key]: value } : b)));
  return html`<fieldset class="bands"><legend>EQ bands</legend>
    ${bands.map((b, i) => html`<div class="band" key=${i}>
      <${Field} label="Hz" name=${`${idPrefix}-freq-${i}`} inputmode="decimal" size="6" value=${b.freq} onInput=${(v) => set(i, 'freq', v)} />
      <${Field} label="dB" name=${`${idPrefix}-gain-${i}`} inputmode="decimal" size="5" value=${b.gain} onInput=${(v) => set(i, 'gain', v)} />
      <${Field} label="Q" name=${`${idPrefix}-q-${i}`} inputmode="decimal" size="4" value=${b.q} onInput=${(v) => set(i, 'q', v)} />
      <button type="button" class="small" aria-label=${`remove band ${i + 1}`} onClick=${() => onChange(bands.filter((_, j) => j !== i))}>✕</button>
    </div>`)}
    <button type="button" class="small" onClick=${() => onChange([...bands, { freq: '1000', gain: '0', q: '1' }])}>+ band</button>
  </fieldset>`;
}

const bandsOut = (bands) => bands.map((b) => drop({ freq: asNumber(b.freq), gain: asNumber(b.gain), q: asNumber(b.q) }));

function toDraft(view) {
  return {
    name: view.name ?? '',
    steps: (view.processing ?? []).map((step) =>
      step.plugin === 'eq'
        ? { ...step, bands: step.bands.map((b) => ({ freq: String(b.freq), gain: String(b.gain), q: String(b.q ?? 1) })) }
        : step.plugin === 'loudness-normalize'
          ? { ...step, target: String(step.target), true_peak: String(step.true_peak ?? -1) }
          : { ...step }),
  };
}

function stepsOut(steps) {
  return steps.map((step) =>
    step.plugin === 'eq'
      ? { ...step, bands: bandsOut(step.bands) }
      : step.plugin === 'loudness-normalize'
        ? drop({ ...step, target: asNumber(step.target), true_peak: asNumber(step.true_peak) })
        : step);
}

/**
 * Name, targets and EQ of one pipeline or station, sent as a JSON merge patch with If-Match
 * (PATCH /api/v1/pipelines/{id} or /api/stations/{id}); the answer says whether it was applied
 * live or by restarting the child.
 */
export function SettingsEditor({ tile }) {
  const base = tile.kind === 'pipeline' ? `/api/v1/pipelines/${tile.id}` : `/api/stations/${tile.id}`;
  const [loaded, setLoaded] = useState(null);
  const [draft, setDraft] = useState(null);
  const [message, setMessage] = useState(null);
  const [busy, setBusy] = useState(false);
  const load = async () => {
    try {
      const answer = await api('GET', base);
      setLoaded(answer);
      setDraft(toDraft(answer.body));
    } catch (error) {
      setMessage({ kind: 'error', text: error.message });
    }
  };
  useEffect(() => {
    void load();
  }, [base]);
  if (draft === null) return html`<div class="editor"><${Message} message=${message} />${message === null && html`<p>Loading…</p>`}</div>`;
  const setStep = (i, step) => setDraft({ ...draft, steps: draft.steps.map((s, j) => (j === i ? step : s)) });
  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    setMessage(null);
    const patch = { processing: stepsOut(draft.steps) };
    if (tile.kind === 'pipeline' && draft.name !== loaded.body.name) patch.name = draft.name;
    try {
      const answer = await api('PATCH', base, patch, loaded.etag ? { 'If-Match': loaded.etag } : {});
      const applied = answer.body?.applied;
      const how = { live: 'Applied live (no restart).', restart: 'Applied by restarting the child.', 'next-start': 'Saved: applied when it next starts.' };
      setMessage({ kind: 'ok', text: how[applied] ?? 'Saved.' });
      await load();
    } catch (error) {
      if (error.status === 412) {
        setMessage({ kind: 'error', text: `${error.message} (changed elsewhere: the form now shows the current settings)` });
        await load();
      } else setMessage({ kind: 'error', text: error.message });
    } finally {
      setBusy(false);
    }
  };
  const prefix = `${tile.kind}-${tile.id}`;
  return html`<form class="editor" onSubmit=${submit} aria-label=${`settings of ${tile.id}`}>
    ${tile.kind === 'pipeline' && html`<${Field} label="Name" name=${`${prefix}-name`} value=${draft.name} onInput=${(v) => setDraft({ ...draft, name: v })} />`}
    ${draft.steps.map((step, i) => step.plugin === 'loudness-normalize'
      ? html`<fieldset key=${i}><legend>Loudness (step ${i})</legend>
          <${Field} label="Target LUFS" name=${`${prefix}-target-${i}`} inputmode="decimal" size="6" value=${step.target} onInput=${(v) => setStep(i, { ...step, target: v })} />
          <${Field} label="Ceiling dBTP" name=${`${prefix}-tp-${i}`} inputmode="decimal" size="6" value=${step.true_peak} onInput=${(v) => setStep(i, { ...step, true_peak: v })} />
        </fieldset>`
      : step.plugin === 'eq'
        ? html`<${BandsEditor} key=${i} idPrefix=${`${prefix}-${i}`} bands=${step.bands} onChange=${(bands) => setStep(i, { ...step, bands })} />`
        : html`<p key=${i}>Step ${i}: ${step.plugin}</p>`)}
    <div class="actions">
      <button type="submit" disabled=${busy}>Apply</button>
      <button type="button" onClick=${() => { setDraft(toDraft(loaded.body)); setMessage(null); }}>Revert</button>
    </div>
    <${Message} message=${message} />
  </form>`;
}

/** POST /api/v1/pipelines from a short form (SRT in, optional loudness and EQ, RTP out). */
export function CreatePipeline() {
  const [f, setF] = useState({ name: '', port: '', latency: '120', target: '-23', true_peak: '-1', loudness: true, bands: [], host: '', outPort: '5004' });
  const [message, setMessage] = useState(null);
  const [busy, setBusy] = useState(false);
  const set = (key) => (value) => setF({ ...f, [key]: value });
  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    setMessage(null);
    const processing = [];
    if (f.loudness) processing.push(drop({ plugin: 'loudness-normalize', target: asNumber(f.target), true_peak: asNumber(f.true_peak) }));
    if (f.bands.length > 0) processing.push({ plugin: 'eq', bands: bandsOut(f.bands) });
    const body = {
      name: f.name,
      input: drop({ type: 'srt', port: asNumber(f.port), latency: asNumber(f.latency) }),
      processing,
      output: drop({ type: 'rtp', host: f.host, port: asNumber(f.outPort) }),
    };
    try {
      const answer = await api('POST', '/api/v1/pipelines', body);
      setMessage({ kind: 'ok', text: `Created ${answer.body.id}.` });
    } catch (error) {
      setMessage({ kind: 'error', text: error.message });
    } finally {
      setBusy(false);
    }
  };
  return html`<form class="create" onSubmit=${submit} aria-label="new pipeline">
    <div class="row">
      <${Field} label="Name" name="new-name" value=${f.name} onInput=${set('name')} />
      <${Field} label="SRT port" name="new-port" inputmode="numeric" size="6" value=${f.port} onInput=${set('port')} />
      <${Field} label="Latency ms" name="new-latency" inputmode="numeric" size="5" value=${f.latency} onInput=${set('latency')} />
    </div>
    <div class="row">
      <label class="check"><input type="checkbox" name="new-loudness" checked=${f.loudness} onChange=${(e) => set('loudness')(e.currentTarget.checked)} /> Loudness</label>
      <${Field} label="Target LUFS" name="new-target" inputmode="decimal" size="6" value=${f.target} onInput=${set('target')} />
      <${Field} label="Ceiling dBTP" name="new-tp" inputmode="decimal" size="5" value=${f.true_peak} onInput=${set('true_peak')} />
    </div>
    <${BandsEditor} idPrefix="new" bands=${f.bands} onChange=${set('bands')} />
    <div class="row">
      <${Field} label="RTP host" name="new-host" value=${f.host} onInput=${set('host')} />
      <${Field} label="RTP port" name="new-out-port" inputmode="numeric" size="6" value=${f.outPort} onInput=${set('outPort')} />
    </div>
    <div class="actions"><button type="submit" disabled=${busy}>Create pipeline</button></div>
    <${Message} message=${message} />
  </form>`;
}
