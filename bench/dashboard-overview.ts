/**
 * What the operator's page costs at scale: one engine with N pipelines (48 by default; `--fed`
 * of them fed by ffmpeg over SRT with a loudness step, the rest without a sender), the page's
 * overview open in Debian's chromium (playwright-core, headless, 1920x1080) at the feed's 10 Hz.
 * Over the same windows, from /proc/PID/stat: the CPU of every chromium process (browser,
 * renderer, GPU and utility processes: the descendants of this bench that run chromium), and
 * the engine's node process with the page open and, in alternate windows, closed (no stream: the
 * feed's ticker stops), so the feed's cost is the difference. From chromium itself (CDP
 * Performance.getMetrics) the layouts, style recalculations and script time per second. Limits (docs/dashboard.md): chromium at most 15 % of a
 * core, the engine's feed at most 2 %.
 *
 *   npm run build && node --import=tsx bench/dashboard-overview.ts [--pipelines 48] [--stations 0] [--fed 4] [--window 30] [--rounds 2]
 *
 * `--stations N` adds N stations configured without autostart (stopped: rows without a child),
 * for a machine that cannot carry 48 running children (an idle one costs 4-5 % of a core).
 *   npm run bench -- --only overview [--window S] [--rounds N]
 */
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { CHROMIUM } from '../test/helpers/browser.js';
import { freeUdpPort } from '../test/helpers/ports.js';
import { freeStationNumber, stationToml } from '../test/helpers/stations.js';
import { sendSine, type Sender } from '../test/helpers/srt-sender.js';
import { BenchEngine, loadAverage, procCpuSeconds, sleep } from './engine-harness.js';
import { median } from './process.js';

export interface OverviewBenchOptions {
  pipelines?: number;
  /** Stations configured without autostart (stopped, no child): rows beside the pipelines. */
  stations?: number;
  fed?: number;
  windowS?: number;
  rounds?: number;
}

export interface OverviewWindow {
  page: boolean;
  seconds: number;
  /** % of one core over the window. */
  engineCpu: number;
  chromiumCpu: number | null;
  chromiumProcesses: number | null;
  /** % of one core per kind of chromium process (browser, renderer, gpu-process, utility). */
  chromiumByKind?: Record<string, number>;
  layoutsPerS: number | null;
  styleRecalcsPerS: number | null;
  /** ms of layout, style recalculation and script per second of window. */
  layoutMsPerS: number | null;
  recalcStyleMsPerS: number | null;
  scriptMsPerS: number | null;
}

export interface OverviewBenchResult {
  pipelines: number;
  stations: number;
  fed: number;
  windowS: number;
  windows: OverviewWindow[];
  /** Medians over the rounds. */
  chromiumCpu: number;
  engineWithPage: number;
  engineWithoutPage: number;
  /** engineWithPage - engineWithoutPage: the feed's cost. */
  feedCpu: number;
  layoutsPerS: number;
  limits: { chromiumCpu: number; feedCpu: number };
  withinLimits: boolean;
  loadBefore: string;
  loadAfter: string;
}

const LIMITS = { chromiumCpu: 15, feedCpu: 2 };

/** Every process below `root` (children, their children, ...), from /proc. */
async function descendants(root: number): Promise<number[]> {
  const parent = new Map<number, number>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone
    }
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift() ?? 0;
    for (const [child, ppid] of parent) {
      if (ppid === pid) {
        out.push(child);
        queue.push(child);
      }
    }
  }
  return out;
}

/** The chromium processes this bench started, with their kind (`--type=`: renderer, gpu-process, utility; the browser has none). */
async function chromiumPids(): Promise<number[]> {
  return [...(await chromiumKinds()).keys()];
}

async function chromiumKinds(): Promise<Map<number, string>> {
  const kinds = new Map<number, string>();
  for (const pid of await descendants(process.pid)) {
    // chromium rewrites its children's command lines into one string: the arguments are not \0-separated
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.split(/[\0 ]/)[0]?.includes('chromium') !== true) continue;
    kinds.set(pid, /--type=([a-z-]+)/.exec(cmdline)?.[1] ?? 'browser');
  }
  return kinds;
}

async function cpuOf(pids: number[]): Promise<Map<number, number>> {
  return new Map(await Promise.all(pids.map(async (pid) => [pid, await procCpuSeconds(pid)] as const)));
}

type Metrics = Record<string, number>;

interface TraceSession {
  send(method: string, params?: object): Promise<unknown>;
  on(event: string, listener: (payload: { value?: unknown[] }) => void): void;
}

/** OVERVIEW_TRACE=file: `ms` of a chromium trace (its timeline, compositor and raster) as JSON events, for chrome://tracing or a summary. */
async function traceInto(cdp: TraceSession, file: string, ms: number): Promise<void> {
  const events: unknown[] = [];
  cdp.on('Tracing.dataCollected', (payload) => events.push(...(payload.value ?? [])));
  const complete = new Promise<void>((resolve) => cdp.on('Tracing.tracingComplete', () => resolve()));
  await cdp.send('Tracing.start', { categories: 'devtools.timeline,cc,viz,blink,toplevel', transferMode: 'ReportEvents' });
  await sleep(ms);
  await cdp.send('Tracing.end');
  await complete;
  await writeFile(file, JSON.stringify(events));
}

async function pageMetrics(cdp: { send(method: 'Performance.getMetrics'): Promise<{ metrics: { name: string; value: number }[] }> }): Promise<Metrics> {
  const { metrics } = await cdp.send('Performance.getMetrics');
  const out: Metrics = Object.fromEntries(metrics.map((m) => [m.name, m.value]));
  return out;
}

async function measure(engine: BenchEngine, seconds: number, page: Page | undefined, cdp: Parameters<typeof pageMetrics>[0] | undefined): Promise<OverviewWindow> {
  const chromiumAtStart = page === undefined ? [] : await chromiumPids();
  const before = await cpuOf(chromiumAtStart);
  const engineBefore = await procCpuSeconds(engine.child.pid);
  const metricsBefore = page === undefined || cdp === undefined ? undefined : await pageMetrics(cdp);
  const t0 = performance.now();
  await sleep(seconds * 1000);
  const dt = (performance.now() - t0) / 1000;
  const engineCpu = (100 * ((await procCpuSeconds(engine.child.pid)) - engineBefore)) / dt;
  if (page === undefined || cdp === undefined || metricsBefore === undefined) {
    return { page: false, seconds: dt, engineCpu, chromiumCpu: null, chromiumProcesses: null, layoutsPerS: null, styleRecalcsPerS: null, layoutMsPerS: null, recalcStyleMsPerS: null, scriptMsPerS: null };
  }
  const kinds = await chromiumKinds();
  const now = [...kinds.keys()];
  const after = await cpuOf(now);
  let chromiumS = 0;
  const byKind: Record<string, number> = {};
  for (const [pid, cpu] of after) {
    const used = cpu - (before.get(pid) ?? 0);
    chromiumS += used;
    const kind = kinds.get(pid) ?? 'other';
    byKind[kind] = (byKind[kind] ?? 0) + (100 * used) / dt;
  }
  const m = await pageMetrics(cdp);
  const rate = (name: string, scale = 1): number => (scale * ((m[name] ?? 0) - (metricsBefore[name] ?? 0))) / dt;
  return {
    page: true,
    seconds: dt,
    engineCpu,
    chromiumCpu: (100 * chromiumS) / dt,
    chromiumProcesses: now.length,
    chromiumByKind: byKind,
    layoutsPerS: rate('LayoutCount'),
    styleRecalcsPerS: rate('RecalcStyleCount'),
    layoutMsPerS: rate('LayoutDuration', 1000),
    recalcStyleMsPerS: rate('RecalcStyleDuration', 1000),
    scriptMsPerS: rate('ScriptDuration', 1000),
  };
}

export async function runOverviewBench(options: OverviewBenchOptions = {}): Promise<OverviewBenchResult> {
  const pipelines = options.pipelines ?? 48;
  const stationCount = options.stations ?? 0;
  const fed = Math.min(options.fed ?? 4, pipelines);
  const windowS = options.windowS ?? 30;
  const rounds = options.rounds ?? 2;
  const loadBefore = await loadAverage();
  const dir = mkdtempSync(path.join(tmpdir(), 'overview-bench-'));
  const profile = mkdtempSync(path.join(tmpdir(), 'overview-bench-chromium-'));
  const stations: string[] = [];
  for (let i = 1; i <= stationCount; i++) {
    stations.push(stationToml({ id: `st${String(i).padStart(2, '0')}`, number: await freeStationNumber(), rtpPort: 9, autostart: false }));
  }
  const engine = await BenchEngine.spawn({ dir, maxPipelines: Math.max(64, pipelines), extraToml: stations });
  const senders: Sender[] = [];
  let browser: BrowserContext | undefined;
  try {
    await engine.ready(60_000);
    const dashboardPort = engine.logs.find((l) => l.event === 'ready')?.dashboard_port;
    if (typeof dashboardPort !== 'number') throw new Error('the engine did not log its dashboard port');
    for (let i = 0; i < pipelines; i++) {
      const port = await freeUdpPort();
      const res = await engine.request('POST', '/api/v1/pipelines', {
        name: `Programme ${String(i + 1).padStart(2, '0')}`,
        input: { type: 'srt', port, latency: 300 },
        processing: i < fed ? [{ plugin: 'loudness-normalize', target: -23 }] : [],
        output: { type: 'rtp', host: '127.0.0.1', port: 9 },
      });
      if (res.status !== 201) throw new Error(`create: ${res.status} ${res.text}`);
      if (i < fed) senders.push(sendSine({ port, amplitude: 0.1, frequency: 1000, modulation: { depth: 0.5, hz: 0.2 }, seconds: 3600 }));
    }
    // Every child started (its state running) before the first window.
    for (let i = 0; i < 600; i++) {
      const items = (JSON.parse((await engine.request('GET', '/api/v1/pipelines')).text) as { pipelines: { state: string }[] }).pipelines;
      if (items.length === pipelines && items.every((p) => p.state === 'running')) break;
      await sleep(500);
    }
    await sleep(5000);

    browser = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1920, height: 1080 },
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    const windows: OverviewWindow[] = [];
    for (let r = 0; r < rounds; r++) {
      windows.push(await measure(engine, windowS, undefined, undefined));
      const page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${dashboardPort}/#view=overview`);
      await page.waitForFunction(`document.querySelectorAll('.ov-row').length === ${pipelines + stationCount}`, undefined, { timeout: 60_000 }).catch(async (error: unknown) => {
        throw new Error(`the page did not draw ${pipelines + stationCount} rows: ${String(await page.evaluate('document.body.innerText.slice(0, 400)'))}`, { cause: error });
      });
      const cdp = await page.context().newCDPSession(page);
      await cdp.send('Performance.enable');
      await sleep(5000);
      if (process.env.OVERVIEW_TRACE !== undefined) await traceInto(cdp, process.env.OVERVIEW_TRACE, 5000);
      windows.push(await measure(engine, windowS, page, cdp));
      await page.close();
      await sleep(2000);
    }
    const on = windows.filter((w) => w.page);
    const off = windows.filter((w) => !w.page);
    const chromiumCpu = median(on.map((w) => w.chromiumCpu ?? Number.NaN));
    const engineWithPage = median(on.map((w) => w.engineCpu));
    const engineWithoutPage = median(off.map((w) => w.engineCpu));
    const feedCpu = engineWithPage - engineWithoutPage;
    return {
      pipelines,
      stations: stationCount,
      fed,
      windowS,
      windows,
      chromiumCpu,
      engineWithPage,
      engineWithoutPage,
      feedCpu,
      layoutsPerS: median(on.map((w) => w.layoutsPerS ?? Number.NaN)),
      limits: LIMITS,
      withinLimits: chromiumCpu <= LIMITS.chromiumCpu && feedCpu <= LIMITS.feedCpu,
      loadBefore,
      loadAfter: await loadAverage(),
    };
  } finally {
    await browser?.close().catch(() => undefined);
    for (const s of senders) s.stop();
    await engine.stop(5000);
    await rm(dir, { recursive: true, force: true });
    await rm(profile, { recursive: true, force: true });
  }
}

const f = (v: number | null, digits = 1): string => (v === null || !Number.isFinite(v) ? '–' : v.toFixed(digits));

export function overviewTable(r: OverviewBenchResult): string {
  return [
    `### The page at ${r.pipelines} pipelines (${r.fed} fed) and ${r.stations} stopped stations, overview at 1920x1080, ${r.windowS} s windows`,
    '',
    '| window | engine % | chromium % (processes) | layouts/s | style recalcs/s | layout ms/s | style ms/s | script ms/s |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...r.windows.map((w) => `| ${w.page ? 'page open' : 'no page'} | ${f(w.engineCpu)} | ${f(w.chromiumCpu)} (${w.chromiumProcesses ?? '–'}) | ${f(w.layoutsPerS)} | ${f(w.styleRecalcsPerS)} | ${f(w.layoutMsPerS)} | ${f(w.recalcStyleMsPerS)} | ${f(w.scriptMsPerS)} |`),
    '',
    `- chromium: **${f(r.chromiumCpu)} %** of a core (limit ${r.limits.chromiumCpu} %); the engine's feed: **${f(r.feedCpu)} %** ` +
      `(${f(r.engineWithPage)} % with the page, ${f(r.engineWithoutPage)} % without; limit ${r.limits.feedCpu} %); ` +
      `${r.withinLimits ? 'within the limits' : 'NOT within the limits'}; load ${r.loadBefore} -> ${r.loadAfter}`,
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1] ?? ''}`) {
  const { values } = parseArgs({
    options: { pipelines: { type: 'string', default: '48' }, stations: { type: 'string', default: '0' }, fed: { type: 'string', default: '4' }, window: { type: 'string', default: '30' }, rounds: { type: 'string', default: '2' } },
  });
  const result = await runOverviewBench({ pipelines: Number(values.pipelines), stations: Number(values.stations), fed: Number(values.fed), windowS: Number(values.window), rounds: Number(values.rounds) });
  process.stdout.write(`${overviewTable(result)}\n\n${JSON.stringify(result, null, 2)}\n`);
}
