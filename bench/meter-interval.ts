/**
 * What 10 Hz meters cost: two engines side by side, identical but for [dashboard]
 * meter_interval_ms (100 vs 1000), one pipeline each (loudness-normalize -23 and a 3-band eq)
 * fed by its own real ffmpeg SRT sender. CPU of each pipeline's child and of each engine process
 * from /proc/<pid>/stat over the same windows (so both see the same machine load).
 *
 *   npm run build && node --import=tsx bench/meter-interval.ts [--windows 4] [--seconds 15]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { freeUdpPort } from '../test/helpers/ports.js';
import { sendSine, type Sender } from '../test/helpers/srt-sender.js';
import { BenchEngine } from './engine-harness.js';

const { values } = parseArgs({ options: { windows: { type: 'string', default: '4' }, seconds: { type: 'string', default: '15' } } });
const WINDOWS = Number(values.windows);
const SECONDS = Number(values.seconds);
const TICKS = 100; // USER_HZ on Linux

interface Side {
  label: string;
  meterMs: number;
  engine: BenchEngine;
  childPid: number;
  sender: Sender;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const cpuTicks = (pid: number): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return Number(fields[11]) + Number(fields[12]); // utime + stime (fields 14, 15)
};

const engines: BenchEngine[] = [];

async function startSide(label: string, meterMs: number): Promise<Side> {
  const dir = mkdtempSync(path.join(tmpdir(), `meter-bench-${label}-`));
  const engine = await BenchEngine.spawn({ dir, extraToml: ['[dashboard]', `meter_interval_ms = ${meterMs}`] });
  engines.push(engine);
  await engine.ready();
  const rest = engine.url;
  const srtPort = await freeUdpPort();
  const created = await fetch(`${rest}/api/v1/pipelines`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      name: `meters ${meterMs} ms`,
      input: { type: 'srt', port: srtPort, latency: 300 },
      processing: [{ plugin: 'loudness-normalize', target: -23 }, { plugin: 'eq', bands: [{ freq: 100, gain: -2 }, { freq: 1000, gain: 1 }, { freq: 8000, gain: 1.5 }] }],
      output: { type: 'rtp', host: '127.0.0.1', port: 9 },
    }),
  });
  const { id } = (await created.json()) as { id: string };
  const sender = sendSine({ port: srtPort, amplitude: 0.1, seconds: WINDOWS * SECONDS + 60 });
  for (let i = 0; i < 150; i++) {
    const view = (await (await fetch(`${rest}/api/v1/pipelines/${id}`)).json()) as { pid: number | null; input_state: string };
    if (view.pid !== null && view.input_state === 'receiving') return { label, meterMs, engine, childPid: view.pid, sender };
    await sleep(200);
  }
  throw new Error(`${label}: the pipeline did not receive audio`);
}

const sides: Side[] = [];
try {
  sides.push(await startSide('A', 100), await startSide('B', 1000));
  await sleep(5000); // warm: both children past their start
  const rows: Record<string, { child: number[]; engine: number[] }> = { A: { child: [], engine: [] }, B: { child: [], engine: [] } };
  for (let w = 0; w < WINDOWS; w++) {
    const start = sides.map((s) => [cpuTicks(s.childPid), cpuTicks(s.engine.child.pid ?? 0)] as const);
    await sleep(SECONDS * 1000);
    sides.forEach((s, i) => {
      const [c0, e0] = start[i] ?? [0, 0];
      rows[s.label]?.child.push((100 * (cpuTicks(s.childPid) - c0)) / TICKS / SECONDS);
      rows[s.label]?.engine.push((100 * (cpuTicks(s.engine.child.pid ?? 0) - e0)) / TICKS / SECONDS);
    });
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  console.log(`load average at the end: ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
  for (const s of sides) {
    const r = rows[s.label] ?? { child: [], engine: [] };
    console.log(`meter_interval_ms=${s.meterMs}: child CPU % per window ${r.child.map((x) => x.toFixed(2)).join(' ')} (median ${median(r.child).toFixed(2)}); engine process ${r.engine.map((x) => x.toFixed(2)).join(' ')} (median ${median(r.engine).toFixed(2)})`);
  }
  const a = rows.A ?? { child: [], engine: [] };
  const b = rows.B ?? { child: [], engine: [] };
  console.log(`10 Hz meters cost per pipeline: child +${(median(a.child) - median(b.child)).toFixed(2)} % of a core (ratio ${(median(a.child) / median(b.child)).toFixed(2)}), engine +${(median(a.engine) - median(b.engine)).toFixed(2)} % (no page open)`);
} finally {
  for (const s of sides) s.sender.stop();
  await Promise.all(engines.map((e) => e.stop(4000)));
  for (const e of engines) rmSync(e.dir, { recursive: true, force: true });
}
