/**
 * The operator's page in a real browser (Debian's chromium, playwright-core) against the real
 * engine with real audio: SRT in from ffmpeg, RTP out measured. Screenshots are kept in
 * test-artifacts/ (1280x720 and a phone's 390x844).
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import { api, createPipeline, eventually, startEngine, type EngineProcess } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { RtpReceiver } from '../helpers/rtp-receiver.js';
import { sendSine } from '../helpers/srt-sender.js';
import { dashboardOf, freeStationNumber, harborPortOf, stationToml } from '../helpers/stations.js';
import { artifact, launchBrowser } from '../helpers/browser.js';
import type { StationView } from '../../src/stations/station.js';

/** The output short-term loudness the metrics endpoint reports for a pipeline's step0. */
async function metricShortTerm(engine: EngineProcess, id: string): Promise<number | undefined> {
  const res = await api<string>(engine, 'GET', '/api/v1/metrics');
  const line = res.text.split('\n').find((l) =>
    l.startsWith('audio_engine_pipeline_loudness_short_term_lufs{') && l.includes(`pipeline_id="${id}"`) && l.includes('stage="output"'));
  const value = line === undefined ? NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
  return Number.isFinite(value) ? value : undefined;
}

/** The short-term value the page shows in a tile (undefined while it shows no signal). */
async function pageShortTerm(page: Page, id: string): Promise<number | undefined> {
  const value = await page.locator(`article[data-id="${id}"] [data-testid="short-term"]`).getAttribute('data-value');
  return value === null || value === '' ? undefined : Number(value);
}

/** "over 1 min 15 s" -> 75 (what the tile shows beside the integrated loudness). */
function secondsShown(text: string | null): number | undefined {
  const match = /over (?:(\d+) h )?(?:(\d+) min ?)?(?:(\d+) s)?/.exec(text ?? '');
  if (match === null || match[0] === 'over ') return undefined;
  return Number(match[1] ?? 0) * 3600 + Number(match[2] ?? 0) * 60 + Number(match[3] ?? 0);
}

void t.test('the page lists pipelines and stations with live meters and controls them, with real audio', async (t) => {
  const stationNumber = await freeStationNumber();
  const stationRtp = await RtpReceiver.open();
  const rtp = await RtpReceiver.open(0, { receiveBufferBytes: 4 << 20 });
  t.teardown(() => Promise.all([stationRtp.close(), rtp.close()]));
  const engine = await startEngine(t, {
    extraToml: stationToml({ id: 'studio-a', number: stationNumber, rtpPort: stationRtp.port, processing: '[{ plugin = "loudness-normalize", target = -23 }]' }),
  });
  const dashboard = dashboardOf(engine);
  const srtPort = await freeUdpPort();
  const pipeline = await createPipeline(engine, {
    name: 'Morning Show',
    srtPort,
    outPort: rtp.port,
    processing: [{ plugin: 'loudness-normalize', target: -23 }, { plugin: 'eq', bands: [{ freq: 1000, gain: 0 }] }],
  });
  // The level swings (0.2 Hz) so that the meters move; 5 s windows hold whole periods.
  const sender = sendSine({ port: srtPort, amplitude: 0.05, frequency: 1000, modulation: { depth: 0.5, hz: 0.2 }, seconds: 150 });
  const stationSender = sendSine({ port: harborPortOf(stationNumber), amplitude: 0.1, frequency: 440, seconds: 120 });
  t.teardown(() => {
    sender.stop();
    stationSender.stop();
  });

  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await page.goto(`${dashboard.url}/`);
  const tile = page.locator(`article[data-id="${pipeline.id}"]`);
  await tile.waitFor({ timeout: 15_000 });
  t.match(await tile.locator('h2').textContent(), 'Morning Show', 'the pipeline is listed by name');
  await page.locator('article[data-id="studio-a"]').waitFor({ timeout: 15_000 });

  // The short-term meter moves: readings taken at 10 Hz while the audio starts and the gain settles.
  const readings = new Set<number>();
  await eventually(async () => {
    const v = await pageShortTerm(page, pipeline.id);
    if (v !== undefined) readings.add(v);
    return readings.size >= 5 ? true : undefined;
  }, 40_000, 'five different short-term readings on the page');
  t.ok(readings.size >= 5, `the short-term meter moved: ${[...readings].join(', ')} LUFS`);

  // Within 1 LU of the metrics endpoint, read back to back once the loudness has settled.
  await new Promise((resolve) => setTimeout(resolve, 4000));
  const pairs: [number, number][] = [];
  for (let i = 0; i < 5; i++) {
    const shown = await pageShortTerm(page, pipeline.id);
    const metric = await metricShortTerm(engine, pipeline.id);
    if (shown !== undefined && metric !== undefined) pairs.push([shown, metric]);
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  t.ok(pairs.length >= 3, 'the page and the metrics endpoint both report short-term loudness');
  for (const [shown, metric] of pairs) t.ok(Math.abs(shown - metric) <= 1, `page ${shown} LUFS vs metrics ${metric} LUFS`);
  await page.screenshot({ path: artifact('dashboard-1280x720.png') });

  // A station restart from the page: a new child (new pid).
  const before = (await api<StationView>(dashboard, 'GET', '/api/stations/studio-a')).body.pid;
  t.type(before, 'number', 'the station runs');
  await page.locator('article[data-id="studio-a"] button', { hasText: 'Restart' }).click();
  const after = await eventually(async () => {
    const pid = (await api<StationView>(dashboard, 'GET', '/api/stations/studio-a')).body.pid;
    return typeof pid === 'number' && pid !== before ? pid : undefined;
  }, 15_000, 'the station to run a new child');
  t.not(after, before, `restarted from the page: pid ${String(before)} -> ${after}`);
  await page.locator('article[data-id="studio-a"] .message.ok').waitFor({ timeout: 5000 });

  // Resetting the pipeline's loudness measurement from the page (POST .../loudness/reset): the
  // integrated figure then covers only the audio since the click.
  const measured = tile.locator('[data-testid="measured"]');
  const coveredBefore = await eventually(async () => {
    const s = secondsShown(await measured.textContent());
    return s !== undefined && s >= 10 ? s : undefined;
  }, 30_000, 'ten seconds of programme measured');
  await tile.locator('button', { hasText: 'Reset I / LRA' }).click();
  const resetAnswer = await tile.locator('.controls .message').textContent({ timeout: 10_000 });
  t.match(resetAnswer, /Reset loudness: done/, `the page reports the reset: ${resetAnswer ?? ''}`);
  const coveredAfter = await eventually(async () => {
    const s = secondsShown(await measured.textContent());
    return s !== undefined && s < 6 ? s : undefined;
  }, 10_000, 'the measurement to start again');
  t.ok(coveredAfter < coveredBefore, `the integrated loudness covered ${coveredBefore} s, then ${coveredAfter} s after the reset`);
  // The same for a station (POST /api/stations/{id}/loudness/reset).
  const stationTile = page.locator('article[data-id="studio-a"]');
  const stationMeasured = stationTile.locator('[data-testid="measured"]');
  const stationBefore = await eventually(async () => {
    const s = secondsShown(await stationMeasured.textContent());
    return s !== undefined && s >= 8 ? s : undefined;
  }, 30_000, 'eight seconds of the station\'s programme measured');
  await stationTile.locator('button', { hasText: 'Reset I / LRA' }).click();
  t.match(await stationTile.locator('.controls .message').textContent({ timeout: 10_000 }), /Reset loudness: done/, 'the page reports the station\'s reset');
  const stationAfter = await eventually(async () => {
    const s = secondsShown(await stationMeasured.textContent());
    return s !== undefined && s < 6 ? s : undefined;
  }, 10_000, 'the station\'s measurement to start again');
  t.ok(stationAfter < stationBefore, `the station's integrated loudness covered ${stationBefore} s, then ${stationAfter} s after the reset`);

  // An EQ change from the page (PATCH /api/v1/pipelines/{id}, the live-change API) is heard: the
  // 1 kHz band after the loudness step goes from 0 to -12 dB.
  const patchProbe = await api(dashboard, 'PATCH', `/api/v1/pipelines/${pipeline.id}`, {}, { 'If-Match': '"no-such-version"' });
  const noPatch = patchProbe.status === 404 && /no route|Route/.test(patchProbe.text);
  await t.test('an EQ change from the page is heard in the received audio', { skip: noPatch ? 'PATCH /api/v1/pipelines/{id} is not in this build' : false }, async (t) => {
    rtp.reset();
    await new Promise((resolve) => setTimeout(resolve, 5500));
    const before = rtp.stats(0.2, 0.2).rmsDbfs[0] ?? NaN;
    await tile.locator('button', { hasText: 'Settings' }).click();
    const gain = tile.locator(`input[name="pipeline-${pipeline.id}-1-gain-0"]`);
    await gain.waitFor({ timeout: 10_000 });
    await gain.fill('-12');
    await tile.locator('form.editor button[type="submit"]').click();
    const answer = await tile.locator('form.editor .message').textContent({ timeout: 15_000 });
    t.match(answer, /Applied/, `the page reports the change: ${answer ?? ''}`);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    rtp.reset();
    await new Promise((resolve) => setTimeout(resolve, 5500));
    const after = rtp.stats(0.2, 0.2).rmsDbfs[0] ?? NaN;
    t.ok(before - after > 9 && before - after < 15, `the received 1 kHz tone fell by ${(before - after).toFixed(1)} dB (${before.toFixed(1)} -> ${after.toFixed(1)} dBFS RMS)`);
  });

  // The phone size.
  await page.screenshot({ path: artifact('dashboard-after-changes-1280x720.png') });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.mouse.wheel(0, -100_000);
  await new Promise((resolve) => setTimeout(resolve, 500));
  await page.screenshot({ path: artifact('dashboard-phone-390x844.png'), fullPage: false });
  await page.setViewportSize({ width: 1280, height: 720 });

  t.same(pageErrors, [], 'no script errors on the page');
});

void t.test('from the page: create (a refusal names the field) and delete a pipeline, stop and start a station; silence and stale marks', async (t) => {
  const stationNumber = await freeStationNumber();
  const stationRtp = await RtpReceiver.open();
  const rtp = await RtpReceiver.open();
  t.teardown(() => Promise.all([stationRtp.close(), rtp.close()]));
  // A station nobody sends to: its tile turns amber after 3 s of no input.
  const engine = await startEngine(t, { extraToml: `[dashboard]\nsilence_alert_s = 3\n${stationToml({ id: 'studio-b', number: stationNumber, rtpPort: stationRtp.port })}` });
  const dashboard = dashboardOf(engine);
  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  const pageErrors: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  await page.goto(`${dashboard.url}/`);
  const station = page.locator('article[data-id="studio-b"]');
  await station.waitFor({ timeout: 15_000 });

  const silence = station.locator('[data-testid="silence"]');
  await silence.waitFor({ timeout: 20_000 });
  t.match(await silence.textContent(), /NO INPUT \d+ s/, 'the silent station is flagged with a word, not a colour alone');
  t.match(await station.getAttribute('class'), /is-silent/, 'and its tile is marked silent (amber)');

  // Create from the form: first a port out of range, refused with the field named, nothing made.
  await page.locator('details.new > summary').click();
  const form = page.locator('form.create');
  await form.locator('input[name="new-name"]').fill('From the page');
  await form.locator('input[name="new-port"]').fill('70000');
  await form.locator('input[name="new-host"]').fill('127.0.0.1');
  await form.locator('input[name="new-out-port"]').fill(String(rtp.port));
  await form.locator('button[type="submit"]').click();
  const refusal = await form.locator('.message.error').textContent({ timeout: 10_000 });
  t.match(refusal, /input\/port must be <= 65535/, `the refusal names the field: ${refusal ?? ''}`);
  t.same((await api<{ pipelines: unknown[] }>(engine, 'GET', '/api/v1/pipelines')).body.pipelines, [], 'nothing was created');
  const srtPort = await freeUdpPort();
  await form.locator('input[name="new-port"]').fill(String(srtPort));
  await form.locator('button[type="submit"]').click();
  const created = await form.locator('.message.ok').textContent({ timeout: 10_000 });
  const id = /Created (pl_[A-Za-z0-9_-]+)/.exec(created ?? '')?.[1] ?? '';
  t.match(id, /^pl_/, `the page reports the new pipeline: ${created ?? ''}`);
  const tile = page.locator(`article[data-id="${id}"]`);
  await tile.waitFor({ timeout: 15_000 });
  const stored = await api<{ name: string; input: { port: number }; processing: { plugin: string }[] }>(engine, 'GET', `/api/v1/pipelines/${id}`);
  t.equal(stored.body.name, 'From the page');
  t.equal(stored.body.input.port, srtPort);
  t.same(stored.body.processing.map((s) => s.plugin), ['loudness-normalize'], 'with the form\'s default loudness step');
  // It carries real audio.
  const sender = sendSine({ port: srtPort, amplitude: 0.1, frequency: 1000, seconds: 20 });
  t.teardown(() => sender.stop());
  t.ok(await rtp.waitForPackets(2000, 20_000), 'the pipeline made on the page sends RTP');
  // An ST 2022-7 leg added: the tile shows both legs and their state.
  const second = await RtpReceiver.open();
  t.teardown(() => second.close());
  const patched = await api(engine, 'PATCH', `/api/v1/pipelines/${id}`, { output: { redundant: { host: '127.0.0.1', port: second.port } } });
  t.equal(patched.status, 200, 'a redundant leg added');
  t.ok(await second.waitForPackets(500, 20_000), 'the second leg sends');
  const leg2 = tile.locator('[data-testid="leg-redundant"]');
  await eventually(async () => ((await leg2.textContent())?.includes('sending') === true ? true : undefined), 15_000, 'the tile to show the second leg sending');
  t.match(await leg2.textContent(), new RegExp(`sending · 127\\.0\\.0\\.1:${second.port}`), 'the second leg: state and destination, in words');
  t.match(await tile.locator('[data-testid="leg-primary"]').textContent(), new RegExp(`sending · 127\\.0\\.0\\.1:${rtp.port}`));
  sender.stop();

  await tile.locator('button', { hasText: 'Delete…' }).click();
  await tile.locator('button', { hasText: 'Confirm delete' }).click();
  await tile.waitFor({ state: 'detached', timeout: 15_000 });
  t.equal((await api(engine, 'GET', `/api/v1/pipelines/${id}`)).status, 404, 'deleted from the page: gone from the API');

  // Stop and start the station from the page.
  await station.getByRole('button', { name: 'Stop', exact: true }).click();
  await eventually(async () => ((await station.locator('[data-testid="state"]').textContent())?.includes('stopped') === true ? true : undefined), 15_000, 'the tile to show the station stopped');
  t.equal((await api<StationView>(dashboard, 'GET', '/api/stations/studio-b')).body.state, 'stopped', 'stopped from the page');
  await station.getByRole('button', { name: 'Start', exact: true }).click();
  const started = await eventually(async () => {
    const s = (await api<StationView>(dashboard, 'GET', '/api/stations/studio-b')).body;
    return s.state === 'running' && typeof s.pid === 'number' ? s : undefined;
  }, 15_000, 'the station to run again');
  t.equal(started.state, 'running', `started from the page (pid ${String(started.pid)})`);

  // A frozen child (SIGSTOP): its statistics stop, the tile says STALE; the engine's watchdog then
  // kills and restarts it (5 s without statistics), and the mark goes away.
  const frozen = started.pid ?? 0;
  process.kill(frozen, 'SIGSTOP');
  t.teardown(() => {
    try {
      process.kill(frozen, 'SIGCONT');
    } catch {
      // gone already
    }
  });
  const stale = station.locator('[data-testid="stale"]');
  await stale.waitFor({ timeout: 10_000 });
  t.match(await stale.textContent(), /STALE: no update for \d+ s/, 'the frozen child\'s tile is marked stale, in words');
  await page.screenshot({ path: artifact('dashboard-stale-silent-1280x720.png') });
  const renewed = await eventually(async () => {
    const s = (await api<StationView>(dashboard, 'GET', '/api/stations/studio-b')).body;
    return typeof s.pid === 'number' && s.pid !== frozen && s.state === 'running' ? s : undefined;
  }, 30_000, 'the watchdog to replace the frozen child');
  t.not(renewed.pid, frozen, `the watchdog replaced it (pid ${frozen} -> ${String(renewed.pid)})`);
  await stale.waitFor({ state: 'detached', timeout: 15_000 });
  t.pass('the stale mark is gone once statistics flow again');
  t.same(pageErrors, [], 'no script errors on the page');
});

void t.test('with auth on, the page without a key loads nothing but the login form', async (t) => {
  const key = 'page-test-key-8c1d0e5b27a94f36';
  const engine = await startEngine(t, { extraToml: `[auth]\nenabled = true\napi_keys = ["${key}"]\n` });
  const dashboard = dashboardOf(engine);
  const browser = await launchBrowser(t);
  const page = await browser.newPage();
  const requested: string[] = [];
  page.on('request', (request) => {
    const url = new URL(request.url());
    requested.push(`${url.pathname}${url.search}`);
  });
  await page.goto(`${dashboard.url}/`);
  await page.locator('form[aria-labelledby="login-title"]').waitFor({ timeout: 15_000 });
  await new Promise((resolve) => setTimeout(resolve, 1000));
  t.equal(await page.locator('article').count(), 0, 'no tiles');
  t.equal(await page.locator('details.new').count(), 0, 'no pipeline form');
  t.same(requested.filter((p) => p.startsWith('/api/') && p !== '/api/stations'), [], 'no API call but the one probe');
  t.equal((await api(dashboard, 'GET', '/api/v1/events')).status, 401, 'the event stream wants the key');
  t.equal((await api(dashboard, 'GET', '/api/v1/pipelines')).status, 401, 'so do the pipeline routes on the dashboard port');
  await page.screenshot({ path: artifact('login-1280x720.png') });

  await page.locator('input[name="api-key"]').fill('not-the-key');
  await page.locator('button[type="submit"]').click();
  t.match(await page.locator('[role="alert"]').textContent({ timeout: 5000 }), 'refused', 'a wrong key is refused');

  await page.locator('input[name="api-key"]').fill(key);
  await page.locator('button[type="submit"]').click();
  await page.locator('[data-testid="connection"]', { hasText: 'live' }).waitFor({ timeout: 10_000 });
  t.pass('with the key the page is live (event stream read with the key in a header)');
  t.ok(requested.some((p) => p === '/api/v1/events'), 'the page opened the event stream');
  t.notOk(requested.some((p) => p.includes(key)), 'the key is in no URL');
  t.notOk(engine.logs.some((line) => JSON.stringify(line).includes(key)), 'the key is in no log line');
});
