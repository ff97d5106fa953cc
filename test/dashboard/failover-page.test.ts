/**
 * The page's failover part in a real browser (Debian's chromium, playwright-core)
 * against the real engine: a pipeline with a main and a backup SRT input, each fed by ffmpeg
 * (main 1 kHz, backup 440 Hz), its RTP output received and its tone measured. The tile says which
 * input is on air in a word and a symbol (not colour alone), offers buttons only for the inputs
 * the pipeline has, and its buttons switch what is heard; a pipeline without a backup shows no
 * failover controls. Screenshots go to test-artifacts/.
 */
import t from 'tap';
import type { Page } from 'playwright-core';
import { api, eventually, startEngine, TEST_SRT_LATENCY_MS } from '../helpers/engine-process.js';
import { freeUdpPort } from '../helpers/ports.js';
import { RtpReceiver } from '../helpers/rtp-receiver.js';
import { sendSine } from '../helpers/srt-sender.js';
import { dashboardOf } from '../helpers/stations.js';
import { artifact, launchBrowser } from '../helpers/browser.js';
import { toneBlocks } from '../helpers/tones.js';

interface FailoverPipeline {
  id: string;
  active_input: string | null;
  selection: string;
  inputs?: { main?: { connected: boolean }; backup?: { connected: boolean } };
}

/**
 * Which sender's tone the output carried over the next 1.5 s: main's 1 kHz or the backup's
 * 440 Hz, whichever dominates (by 10 dB) most 20 ms blocks of the left channel; 'mixed' or
 * 'silence' otherwise.
 */
async function heardTone(rtp: RtpReceiver): Promise<'main' | 'backup' | 'mixed' | 'silence'> {
  rtp.reset();
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const left = rtp.interleaved(0.1, 0.1).filter((_, i) => i % 2 === 0);
  const blocks = toneBlocks(left, [1000, 440], 960);
  const count = (test: (a: number[]) => boolean): number => blocks.filter((b) => test(b.amplitudes)).length;
  const main = count(([k = 0, a = 0]) => k > 0.01 && k > 3 * a);
  const backup = count(([k = 0, a = 0]) => a > 0.01 && a > 3 * k);
  if (main > 0.8 * blocks.length) return 'main';
  if (backup > 0.8 * blocks.length) return 'backup';
  return main + backup === 0 ? 'silence' : 'mixed';
}

/**
 * What the output carries while the engine says `input` is on air: heard, with the engine's
 * view the same before and after (a loaded machine can make an input stall and the policy cover
 * it; then it listens again), for up to 20 s.
 */
async function heardWhileOnAir(engine: { url: string }, id: string, rtp: RtpReceiver, input: string): Promise<string> {
  let heard = 'nothing';
  const until = Date.now() + 20_000;
  while (Date.now() < until) {
    const before = (await api<FailoverPipeline>(engine, 'GET', `/api/v1/pipelines/${id}`)).body.active_input;
    heard = await heardTone(rtp);
    const after = (await api<FailoverPipeline>(engine, 'GET', `/api/v1/pipelines/${id}`)).body.active_input;
    if (before === input && after === input && heard === input) return heard;
  }
  return heard;
}

/** What the tile's on-air part shows: the input (data-input), the selection and the badge text. */
/** What the evaluate callback uses of the section element (the tests compile without the DOM's types). */
interface OnAirElement {
  getAttribute(name: string): string | null;
  querySelector(selector: string): { textContent: string | null } | null;
}

async function onAir(page: Page, id: string): Promise<{ input: string | null; selection: string | null; text: string }> {
  // one read of all three, so that a switch between reads cannot mix two states
  return page.locator(`article[data-id="${id}"] [data-testid="on-air"]`).evaluate((section: OnAirElement) => ({
    input: section.getAttribute('data-input'),
    selection: section.getAttribute('data-selection'),
    text: section.querySelector('[data-testid="on-air-badge"]')?.textContent ?? '',
  }));
}

void t.test('the tile shows the input on air and switches it, with real senders on main and backup', async (t) => {
  const rtp = await RtpReceiver.open(0, { receiveBufferBytes: 4 << 20 });
  const plainRtp = await RtpReceiver.open();
  t.teardown(() => Promise.all([rtp.close(), plainRtp.close()]));
  const engine = await startEngine(t);
  await t.test('with a real pipeline on main and backup', async (t) => {
    const dashboard = dashboardOf(engine);
    const [mainPort, backupPort, plainPort] = [await freeUdpPort(), await freeUdpPort(), await freeUdpPort()];
    const created = await api<FailoverPipeline>(engine, 'POST', '/api/v1/pipelines', {
      name: 'Breakfast with backup',
      input: { type: 'srt', port: mainPort, latency: TEST_SRT_LATENCY_MS },
      backup: { type: 'srt', port: backupPort, latency: TEST_SRT_LATENCY_MS },
      failover: { return_s: 2 },
      processing: [],
      output: { type: 'rtp', host: '127.0.0.1', port: rtp.port },
    });
    t.equal(created.status, 201, `created with a backup: ${created.status} ${created.status === 201 ? '' : created.text}`);
    const id = created.body.id;
    const plain = await api<FailoverPipeline>(engine, 'POST', '/api/v1/pipelines', {
      name: 'No backup',
      input: { type: 'srt', port: plainPort, latency: TEST_SRT_LATENCY_MS },
      processing: [],
      output: { type: 'rtp', host: '127.0.0.1', port: plainRtp.port },
    });
    t.equal(plain.status, 201, 'and one without');

    const main = sendSine({ port: mainPort, amplitude: 0.2, frequency: 1000, seconds: 150 });
    const backup = sendSine({ port: backupPort, amplitude: 0.1, frequency: 440, seconds: 150 });
    t.teardown(() => {
      main.stop();
      backup.stop();
    });

    const browser = await launchBrowser(t);
    const page = await browser.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${dashboard.url}/`);
    const tile = page.locator(`article[data-id="${id}"]`);
    await tile.waitFor({ timeout: 15_000 });
    const plainTile = page.locator(`article[data-id="${plain.body.id}"]`);
    await plainTile.waitFor({ timeout: 15_000 });
    t.equal(await plainTile.locator('[data-testid="on-air"]').count(), 0, 'the pipeline without a backup shows no failover part');
    t.equal(await plainTile.getByRole('button', { name: /^Force / }).count(), 0, 'and no button to force an input');

    // Main on air, in words and a symbol; buttons for auto, main and backup only (no fallback file).
    // Whichever caller connects first goes on air; with both delivering, the policy settles on
    // main (return_s 2): wait for that in the engine's view before reading the tile.
    await eventually(async () => {
      const view = (await api<FailoverPipeline>(engine, 'GET', `/api/v1/pipelines/${id}`)).body;
      return view.active_input === 'main' && view.inputs?.main?.connected === true && view.inputs.backup?.connected === true ? true : undefined;
    }, 40_000, 'the engine to settle on main with both inputs connected');
    const mainShown = await eventually(async () => {
      const shown = await onAir(page, id);
      return shown.input === 'main' ? shown : undefined;
    }, 10_000, 'the tile to show MAIN on air');
    t.match(mainShown.text, /● ON AIR: MAIN/, `the badge says it with a symbol and a word: "${mainShown.text.trim()}"`);
    t.equal(mainShown.selection, 'auto');
    const buttons = await tile.locator('[data-testid="on-air"] button').allTextContents();
    t.same(buttons.map((b) => b.trim()), ['Auto', 'Force main', 'Force backup'], 'buttons for the inputs the pipeline has');
    await eventually(async () => ((await tile.locator('[data-testid="input-backup"]').textContent())?.includes('dBFS') === true ? true : undefined), 20_000, 'the backup\'s level on the tile');
    t.equal(await heardWhileOnAir(engine, id, rtp, 'main'), 'main', 'the output carries main\'s 1 kHz');
    await page.screenshot({ path: artifact('failover-main-1280x720.png') });

    // Force the backup from the page: stored, on air, heard (the select route, docs/failover.md).
    const route = await api(engine, 'POST', `/api/v1/pipelines/${id}/input`, { select: 'auto' });
    t.equal(route.status, 200, `the select route takes "auto": ${route.text}`);
    await t.test('forcing an input from the page', async (t) => {
      await tile.getByRole('button', { name: 'Force backup' }).click();
      t.match(await tile.locator('[data-testid="on-air"] .message').textContent({ timeout: 10_000 }), /Force backup: done/, 'the page reports the choice');
      const forced = await eventually(async () => {
        const view = (await api<FailoverPipeline>(engine, 'GET', `/api/v1/pipelines/${id}`)).body;
        return view.selection === 'backup' && view.active_input === 'backup' ? view : undefined;
      }, 10_000, 'the engine to put the backup on air');
      t.equal(forced.selection, 'backup', 'the API says the backup is forced');
      const backupShown = await eventually(async () => {
      const shown = await onAir(page, id);
      return shown.input === 'backup' ? shown : undefined;
    }, 10_000, 'the tile to show BACKUP');
      t.match(backupShown.text, /◆ ON AIR: BACKUP/, `the badge: "${backupShown.text.trim()}"`);
      t.match(await tile.locator('[data-testid="selection"]').textContent(), /forced by hand/, 'and says it is forced');
      t.equal(await tile.getByRole('button', { name: 'Force backup' }).getAttribute('aria-pressed'), 'true', 'the pressed button is marked');
      t.equal(await heardWhileOnAir(engine, id, rtp, 'backup'), 'backup', 'the output carries the backup\'s 440 Hz');
      await page.screenshot({ path: artifact('failover-forced-backup-1280x720.png') });

      // Back to auto: the policy returns to the healthy main (return_s 2).
      await tile.getByRole('button', { name: 'Auto' }).click();
      await eventually(async () => {
        const shown = await onAir(page, id);
        return shown.selection === 'auto' && shown.input === 'main' ? true : undefined;
      }, 20_000, 'the tile to show MAIN on auto again');
      t.pass('auto from the page: main on air again');
    });

    // The main sender goes: the policy puts the backup on air and the tile says so, on auto.
    main.stop();
    await eventually(async () => {
      const shown = await onAir(page, id);
      return shown.selection === 'auto' && shown.input === 'backup' ? true : undefined;
    }, 20_000, 'the tile to show BACKUP after the main sender stopped');
    const mainState = await eventually(async () => {
      const text = (await tile.locator('[data-testid="input-main"]').textContent()) ?? '';
      return /no audio/.test(text) ? text : undefined;
    }, 10_000, 'the main input to show "no audio"');
    t.match(mainState, /no audio/, `the main input shows "no audio": "${mainState.trim()}"`);
    await page.screenshot({ path: artifact('failover-lost-main-1280x720.png') });
    await page.setViewportSize({ width: 390, height: 844 });
    await tile.scrollIntoViewIfNeeded({ timeout: 60_000 });
    await page.screenshot({ path: artifact('failover-phone-390x844.png') });

    t.same(pageErrors, [], 'no script errors on the page');
    t.comment(`failover events: ${engine.logs.filter((l) => l.event === 'failover').map((l) => l.msg).join('; ')}`);
  });
});
