/**
 * How /proc/stat's busy time keeps up with the clock: once a second, the seconds of CPU time the
 * `cpu` line counted per CPU against the seconds that passed, and the host's busy time both ways:
 * from the tick-counted busy fields, and as the CPUs' time less their idle time (which the kernel
 * keeps exactly), beside the sum of every process's CPU (/proc/PID/stat) over the same second.
 * Run it beside a load (a scale bench) to see what admission's sampler would read
 * (src/capacity/host-capacity.ts measures busy time the second way). docs/capacity.md.
 *
 *   node --import=tsx bench/host-ticks.ts [--seconds 300] [--min-busy 50]
 */
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { parseHostTimes, parseProcessCpu } from '../src/capacity/proc-stat.js';
import { median } from './process.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '300' }, 'min-busy': { type: 'string', default: '50' } } });
const SECONDS = Number(values.seconds);
const MIN_BUSY = Number(values['min-busy']);
if (!(SECONDS > 0 && SECONDS <= 3600) || !(MIN_BUSY >= 0)) throw new Error('--seconds 1-3600, --min-busy >= 0');

function host(): { totalS: number; idleS: number; cpus: number } {
  const times = parseHostTimes(readFileSync('/proc/stat', 'latin1'));
  if (times === undefined) throw new Error('cannot read /proc/stat');
  return times;
}

function processes(): Map<number, number> {
  const cpu = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const s = parseProcessCpu(readFileSync(`/proc/${name}/stat`, 'latin1'));
      if (s !== undefined) cpu.set(Number(name), s);
    } catch {
      // gone between the listing and the read
    }
  }
  return cpu;
}

const rates: number[] = [];
let prev = { at: performance.now(), times: host(), cpu: processes() };
for (let i = 0; i < SECONDS; i += 1) {
  await sleep(1000);
  const now = { at: performance.now(), times: host(), cpu: processes() };
  const wallS = (now.at - prev.at) / 1000;
  const cpus = now.times.cpus;
  const ticksS = now.times.totalS - prev.times.totalS;
  const idleS = now.times.idleS - prev.times.idleS;
  let procS = 0;
  for (const [pid, s] of now.cpu) procS += s - (prev.cpu.get(pid) ?? s);
  const byTicks = (100 * (ticksS - idleS)) / (ticksS / cpus);
  const byClock = (100 * (cpus * wallS - idleS)) / wallS;
  const line = `${new Date().toISOString().slice(11, 19)} ticks per CPU per second ${(ticksS / cpus / wallS).toFixed(2)}; ` +
    `busy by the ticks ${byTicks.toFixed(0)} %, by the clock less idle ${byClock.toFixed(0)} %, every process ${((100 * procS) / wallS).toFixed(0)} %`;
  console.log(line);
  if (byClock >= MIN_BUSY) rates.push(ticksS / cpus / wallS);
  prev = now;
}
console.log(rates.length === 0
  ? `no second at least ${MIN_BUSY} % busy`
  : `${rates.length} second(s) at least ${MIN_BUSY} % busy: ticks per CPU per second ${Math.min(...rates).toFixed(2)}-${Math.max(...rates).toFixed(2)}, median ${median(rates).toFixed(2)}`);
