/**
 * Where the pipelines' CPU goes, thread by thread: over one window, the CPU of every thread of
 * every running pipeline child (a `gst-launch-1.0` whose graph has a `clockbridge`), summed by
 * thread name (`bridge:src` the output thread, `src:src` SRT receive + demux + decode + the
 * bridge's write, `SRT:RcvQ:w1` and `SRT:TsbPd` libsrt's, `gst-launch-1.0` the bus messages
 * printed, ...), in % of a core in all and per child. Run it beside a load (a scale bench at
 * its window); it only reads /proc. docs/performance.md, "The output thread at scale".
 *
 *   node --import=tsx bench/thread-cpu.ts [--seconds 30]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { parseProcessCpu } from '../src/capacity/proc-stat.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '30' } } });
const SECONDS = Number(values.seconds);
if (!(SECONDS > 0 && SECONDS <= 600)) throw new Error('--seconds 1-600');

/** thread (pid/tid) -> its name and CPU seconds, for every thread of every pipeline child */
function threads(): Map<string, { name: string; pid: string; cpuS: number }> {
  const out = new Map<string, { name: string; pid: string; cpuS: number }>();
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0');
      if (!(argv[0] ?? '').endsWith('gst-launch-1.0') || !argv.includes('clockbridge')) continue;
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'latin1');
        const cpuS = parseProcessCpu(stat);
        const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        if (cpuS !== undefined) out.set(`${pid}/${tid}`, { name, pid, cpuS });
      }
    } catch {
      // gone between the listing and the read
    }
  }
  return out;
}

const before = threads();
const t0 = performance.now();
await sleep(SECONDS * 1000);
const after = threads();
const windowS = (performance.now() - t0) / 1000;
const byName = new Map<string, number>();
const children = new Set<string>();
for (const [key, b] of after) {
  const a = before.get(key);
  if (a === undefined) continue; // started within the window
  children.add(b.pid);
  byName.set(b.name, (byName.get(b.name) ?? 0) + (b.cpuS - a.cpuS));
}
const n = children.size;
const total = [...byName.values()].reduce((s, v) => s + v, 0);
console.log(`${n} pipeline children, ${windowS.toFixed(1)} s; % of a core, in all and per child`);
console.log('| thread | all | per child |');
console.log('|---|---:|---:|');
for (const [name, cpuS] of [...byName].sort((x, y) => y[1] - x[1])) {
  if (cpuS <= 0) continue;
  const pct = (cpuS / windowS) * 100;
  console.log(`| ${name} | ${pct.toFixed(1)} | ${(n > 0 ? pct / n : 0).toFixed(3)} |`);
}
const pct = (total / windowS) * 100;
console.log(`| all | ${pct.toFixed(1)} | ${(n > 0 ? pct / n : 0).toFixed(3)} |`);
