/**
 * The host's CPU times (/proc/stat) and a process's (/proc/PID/stat), for the capacity sampler.
 * Under the systemd unit /proc/stat needs the full /proc (no ProcSubset=pid).
 */
import { readFile } from 'node:fs/promises';

/** Clock ticks per second of /proc times (USER_HZ): 100 on every Linux architecture we run on. */
const USER_HZ = 100;

export interface HostTimes {
  /** Seconds of CPU time, all CPUs together, since boot. */
  totalS: number;
  /** The part of it spent idle or waiting for I/O. */
  idleS: number;
  /** Online CPUs (the `cpuN` lines). */
  cpus: number;
}

/**
 * The `cpu` line: user nice system idle iowait irq softirq steal (guest time is already in user).
 * Steal counts as busy: the hypervisor gave that time to someone else.
 */
export function parseHostTimes(text: string): HostTimes | undefined {
  const lines = text.split('\n');
  const line = lines[0] ?? '';
  const fields = line.trim().split(/\s+/);
  if (fields[0] !== 'cpu') return undefined;
  const ticks = fields.slice(1, 9).map(Number);
  if (ticks.length < 8 || ticks.some((x) => !Number.isFinite(x))) return undefined;
  const total = ticks.reduce((a, b) => a + b, 0);
  const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0);
  const cpus = lines.filter((l) => /^cpu\d+ /.test(l)).length;
  return { totalS: total / USER_HZ, idleS: idle / USER_HZ, cpus: Math.max(1, cpus) };
}

export async function readHostTimes(): Promise<HostTimes | undefined> {
  try {
    return parseHostTimes(await readFile('/proc/stat', 'latin1'));
  } catch {
    return undefined;
  }
}

/** utime + stime of a process (all its threads), seconds; undefined when it is gone. */
export function parseProcessCpu(text: string): number | undefined {
  // Fields after the command name, which is in parentheses and may hold spaces.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return Number.isFinite(utime) && Number.isFinite(stime) ? (utime + stime) / USER_HZ : undefined;
}

export async function readProcessCpu(pid: number): Promise<number | undefined> {
  try {
    return parseProcessCpu(await readFile(`/proc/${pid}/stat`, 'latin1'));
  } catch {
    return undefined;
  }
}
