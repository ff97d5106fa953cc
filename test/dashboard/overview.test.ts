/**
 * The overview in a real browser (Debian's chromium, playwright-core, 1920x1080) against the real
 * engine with 48 rows: 16 running pipelines, five fed by ffmpeg over SRT (three tones, one on its
 * backup input with the main unfed, one sending silence) and 11 without a sender, and 32 stations
 * configured without autostart (stopped: no child). An idle child costs 4-5 % of a core here, so
 * 48 running children alone fill the 2-core test machine, which other work shares; the rows, their
 * size and their order do not depend on the kind. Every row lies inside the viewport (no scrolling); an alarm the engine
 * reports (a sender stopped: input lost) is on the page within 1 s, on the first row, in words;
 * filters, keyboard and the detail tile and back. `UPDATE_SCREENSHOT=1` writes the screenshot
 * docs/dashboard.md shows (docs/dashboard-overview.png); otherwise it goes to test-artifacts/.
 */
import path from 'node:path';
import t from 'tap';
import { api, eventually, ROOT, startEngine, TEST_SRT_LATENCY_MS } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { sendSine, type Sender } from '../helpers/srt-sender.js';
import { dashboardOf, freeStationNumber, stationToml } from '../helpers/stations.js';
import { artifact, launchBrowser } from '../helpers/browser.js';

const ROWS = 48;
const PIPELINES = 16;
const STATIONS = ROWS - PIPELINES;
const SILENCE_ALERT_S = 3;
const LOUDNESS = [{ plugin: 'loudness-normalize', target: -23 }];

interface View {
  id: string;
  input_state: string;
  active_input?: string | null;
  silence_seconds: number;
}

/** What the evaluate callbacks use of a row element (the tests compile without the DOM's types). */
interface RowElement {
  dataset: Record<string, string | undefined>;
  getBoundingClientRect(): { top: number; left: number; bottom: number; right: number };
  querySelectorAll(selector: string): ArrayLike<unknown>;
  ownerDocument: { defaultView: { getComputedStyle(element: unknown): { fontSize: string } } };
}

void t.test('the overview shows 48 pipelines on one 1920x1080 screen, alarms first, in words', async (t) => {
  t.setTimeout(600_000); // children starting beside the other work of a shared 2-core machine
  const stations: string[] = [];
  for (let i = 1; i <= STATIONS; i++) {
    stations.push(stationToml({ id: `st${String(i).padStart(2, '0')}`, number: await freeStationNumber(), rtpPort: 9, autostart: false }));
  }
  const engine = await startEngine(t, { extraToml: [...stations, '[dashboard]', `silence_alert_s = ${SILENCE_ALERT_S}`].join('\n') });
  const dashboard = dashboardOf(engine);
  const senders: Sender[] = [];
  t.teardown(() => {
    for (const s of senders) s.stop();
  });
  const create = async (body: Record<string, unknown>): Promise<string> => {
    const res = await api<View>(engine, 'POST', '/api/v1/pipelines', { output: { type: 'rtp', host: '127.0.0.1', port: 9 }, ...body });
    if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
    return res.body.id;
  };
  const srt = (port: number): Record<string, unknown> => ({ type: 'srt', port, latency: TEST_SRT_LATENCY_MS });

  // Fed: three tones (one of them stopped later), one silent, one on its backup.
  const fed: Record<string, { id: string; port: number }> = {};
  for (const [name, amplitude] of [['Tone A', 0.1], ['Tone B', 0.05], ['Drop me', 0.1], ['Silent', 0]] as const) {
    const port = await freeUdpPort();
    fed[name] = { id: await create({ name, input: srt(port), processing: LOUDNESS }), port };
    senders.push(sendSine({ port, amplitude, frequency: 1000, seconds: 240 }));
  }
  const [mainPort, backupPort] = [await freeUdpPort(), await freeUdpPort()];
  const backupId = await create({ name: 'On backup', input: srt(mainPort), backup: srt(backupPort), processing: LOUDNESS });
  senders.push(sendSine({ port: backupPort, amplitude: 0.1, frequency: 440, seconds: 240 }));
  const started = Date.now();
  for (let i = 6; i <= PIPELINES; i++) {
    await create({ name: `Programme ${String(i).padStart(2, '0')}`, input: srt(await freeUdpPort()), processing: [] });
  }
  t.comment(`${PIPELINES} pipelines created in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const dropId = fed['Drop me']?.id ?? '';
  const silentId = fed.Silent?.id ?? '';

  const browser = await launchBrowser(t, { width: 1920, height: 1080 });
  const page = await browser.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await page.goto(`${dashboard.url}/`, { timeout: 120_000 });
  const rows = page.locator('.ov-row');
  await page.waitForFunction(`document.querySelectorAll('.ov-row').length === ${ROWS}`, undefined, { timeout: 60_000 });
  t.equal(await rows.count(), ROWS, `the overview is the default view at ${ROWS} pipelines and stations: one row each`);

  // The fed pipelines settle: the tones receive, the silent one alarms, the backup is on air.
  await eventually(async () => {
    const views = await Promise.all(['Tone A', 'Tone B', 'Drop me'].map(async (n) => (await api<View>(engine, 'GET', `/api/v1/pipelines/${fed[n]?.id ?? ''}`)).body));
    return views.every((v) => v.input_state === 'receiving') ? true : undefined;
  }, 60_000, 'the three tones to be received');
  const row = (id: string) => page.locator(`.ov-row[data-id="${id}"]`);
  await page.waitForFunction(`document.querySelector('.ov-row[data-id="${silentId}"]')?.textContent.includes('SILENCE ON AIR')`, undefined, { timeout: 60_000 });
  t.match(await row(silentId).locator('[data-testid="ov-status"]').textContent(), /✖ SILENCE ON AIR \d+ s/, 'the silent pipeline says so in words');
  // The backup row's text at the moment it shows the backup on air (a loaded machine can make inputs flap).
  const backupText = await page.waitForFunction(`(() => { const r = document.querySelector('.ov-row[data-id="${backupId}"]');
    return r !== null && r.querySelector('[data-input="backup"]') !== null ? r.textContent : false; })()`, undefined, { timeout: 60_000 });
  const backupStatus = String(await backupText.jsonValue());
  t.match(backupStatus, /◆ BACKUP/, `the backup pipeline shows BACKUP on air, with a symbol: "${backupStatus}"`);
  t.match(backupStatus, /⚠ ON BACKUP/, 'and the reason in words');
  t.match(backupStatus, /MAIN INPUT LOST/, 'and that its main is lost');
  await page.waitForFunction(`document.querySelector('.ov-row[data-id="${fed['Tone A']?.id ?? ''}"] [data-testid="ov-short-term"]')?.dataset.value !== undefined`, undefined, { timeout: 30_000 });
  t.equal(await row(fed['Tone A']?.id ?? '').locator('[data-testid="ov-on-air"]').getAttribute('data-input'), 'main', 'a tone is on main, with its short-term loudness');
  t.match(await row('st01').locator('[data-testid="ov-status"]').textContent(), /■ stopped/, 'a stopped station says so');

  // All 48 rows inside the 1920x1080 viewport, without scrolling, text at least 12 px.
  const [width, height, scrollHeight] = await page.evaluate<number[]>('[window.innerWidth, window.innerHeight, document.documentElement.scrollHeight]');
  const boxes = await rows.evaluateAll((els: RowElement[]) => els.map((el) => {
    const r = el.getBoundingClientRect(); // a DOMRect's fields are getters: copied one by one
    return { id: el.dataset.id ?? '', top: r.top, left: r.left, bottom: r.bottom, right: r.right };
  }));
  t.ok(boxes.every((b) => [b.top, b.left, b.bottom, b.right].every(Number.isFinite)), 'every row has a box');
  const outside = boxes.filter((b) => b.top < 0 || b.left < 0 || b.bottom > (height ?? 0) || b.right > (width ?? 0));
  t.equal(boxes.length, ROWS);
  t.same(outside, [], `every row lies inside ${width}x${height} (lowest row ends at ${Math.max(...boxes.map((b) => b.bottom)).toFixed(0)} px)`);
  t.ok((scrollHeight ?? Infinity) <= (height ?? 0), `no scrolling: the page is ${scrollHeight} px high`);
  const fontSizes = await rows.evaluateAll((els: RowElement[]) => els.flatMap((el) =>
    [el, ...Array.from(el.querySelectorAll('*'))].map((e) => Number.parseFloat(el.ownerDocument.defaultView.getComputedStyle(e).fontSize))));
  t.ok(Math.min(...fontSizes) >= 12, `text in the rows is at least 12 px (smallest ${Math.min(...fontSizes)} px)`);
  const shot = process.env.UPDATE_SCREENSHOT === '1' ? path.join(ROOT, 'docs', 'dashboard-overview.png') : artifact('overview-1920x1080.png');
  await page.screenshot({ path: shot });
  t.comment(`screenshot: ${shot}`);

  // Alarms first: every alarmed row before every healthy one; the count in the title and header.
  const severities = await rows.evaluateAll((els: RowElement[]) => els.map((el) => el.dataset.severity ?? ''));
  const firstOk = severities.indexOf('ok');
  t.ok(firstOk > 0 && severities.slice(firstOk).every((s) => s === 'ok'), `alarmed rows first (${firstOk} of them), then the healthy ones`);
  t.match(await page.title(), /^\(\d+\) ⚠ audio-engine$/, 'the alarm count is in the title');
  t.match(await page.locator('[data-testid="alarm-count"]').textContent(), /✖ \d+ in alarm/, 'and in the header');

  // An alarm raised on the engine: stop a sender. The engine's view reports the input lost; the
  // page shows it within 1 s, on the first row, with the reason in words.
  senders[2]?.stop();
  const engineSaid = eventually(async () => {
    const view = (await api<View>(engine, 'GET', `/api/v1/pipelines/${dropId}`)).body;
    return view.input_state === 'waiting' ? Date.now() : undefined;
  }, 30_000, 'the engine to report the input lost');
  const pageSaid = page.waitForFunction(`(() => { const first = document.querySelector('.ov-row'); return first !== null && first.dataset.id === '${dropId}' && first.textContent.includes('INPUT LOST'); })()`,
    undefined, { timeout: 40_000, polling: 20 }).then(() => Date.now());
  const [engineAt, pageAt] = await Promise.all([engineSaid, pageSaid]);
  t.ok(pageAt - engineAt <= 1000, `the alarm is on the page ${pageAt - engineAt} ms after the engine's view reported it (at most 1000)`);
  t.match(await rows.first().locator('[data-testid="ov-status"]').textContent(), /✖ INPUT LOST/, 'the first row gives the reason in words');

  // Filters: by name, then by alarm.
  const search = page.getByLabel('filter by name');
  await search.fill('tone');
  await page.waitForFunction(`document.querySelectorAll('.ov-row').length === 2`, undefined, { timeout: 5000 });
  t.same((await rows.locator('.ov-name').allTextContents()).sort(), ['Tone A', 'Tone B'], 'the name filter leaves the two tones');
  await search.fill('');
  await page.getByLabel('filter by alarm').selectOption('silence');
  await page.waitForFunction(`document.querySelectorAll('.ov-row').length === 1`, undefined, { timeout: 5000 });
  t.equal(await rows.first().getAttribute('data-id'), silentId, 'the alarm filter leaves the silent pipeline');
  await page.getByLabel('filter by alarm').selectOption('all');
  await page.waitForFunction(`document.querySelectorAll('.ov-row').length === ${ROWS}`, undefined, { timeout: 5000 });

  // Keyboard, in a list whose order holds still (stopped stations, by name): arrows move between
  // rows, Enter opens the row's tile, Escape returns to the same row.
  await search.fill('Station st0');
  await page.waitForFunction(`document.querySelectorAll('.ov-row').length === 9`, undefined, { timeout: 5000 });
  const focusedKey = (): Promise<unknown> => page.evaluate('document.activeElement?.dataset?.key ?? null');
  await row('st01').focus();
  await page.keyboard.press('ArrowRight');
  t.equal(await focusedKey(), 'station:st02', 'ArrowRight moves to the next row');
  await page.keyboard.press('ArrowDown');
  t.equal(await focusedKey(), 'station:st05', 'ArrowDown moves one line of the grid (three columns)');
  await page.keyboard.press('Enter');
  await page.locator('[data-testid="detail"] article[data-id="st05"]').waitFor({ timeout: 5000 });
  t.pass('Enter opens the row\'s tile (meters, controls, logs)');
  t.match(page.url(), /open=station%3Ast05/, 'the open row is in the URL');
  await page.keyboard.press('Escape');
  await page.locator('[data-testid="detail"]').waitFor({ state: 'detached', timeout: 5000 });
  t.equal(await focusedKey(), 'station:st05', 'Escape returns to the overview, on the same row');
  t.equal(await rows.count(), 9, 'with the filter as it was');
  await search.fill('Drop me');
  await page.waitForFunction(`document.querySelectorAll('.ov-row').length === 1`, undefined, { timeout: 5000 });
  await row(dropId).click();
  await page.locator(`[data-testid="detail"] article[data-id="${dropId}"]`).waitFor({ timeout: 5000 });
  await page.getByTestId('back').click();
  await page.locator('[data-testid="detail"]').waitFor({ state: 'detached', timeout: 5000 });
  t.equal(await focusedKey(), `pipeline:${dropId}`, 'a click opens it too, and the Back button returns to its row');
  await search.fill('');
  await page.waitForFunction(`document.querySelectorAll('.ov-row').length === ${ROWS}`, undefined, { timeout: 5000 });

  // One click to the tiles and back.
  await page.getByTestId('view-toggle').click();
  await page.locator('article.tile').first().waitFor({ timeout: 10_000 });
  t.equal(await rows.count(), 0, 'the toggle shows the tiles');
  await page.getByTestId('view-toggle').click();
  await page.waitForFunction(`document.querySelectorAll('.ov-row').length === ${ROWS}`, undefined, { timeout: 10_000 });
  t.pass('and the overview again');
  t.same(pageErrors, [], 'no script errors on the page');
});
