/** CPU time and resident memory of a process, read from /proc at scrape time. */
import { readFile } from 'node:fs/promises';

export interface ProcessStats {
  cpuSeconds: number;
  residentBytes: number;
}

/** Clock ticks per second of /proc/<pid>/stat times (USER_HZ): 100 on every Linux architecture we run on. */
const USER_HZ = 100;

export async function readProcessStats(pid: number): Promise<ProcessStats | undefined> {
  try {
    const [stat, status] = await Promise.all([
      readFile(`/proc/${pid}/stat`, 'latin1'),
      readFile(`/proc/${pid}/status`, 'latin1'),
    ]);
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(fields[11]);
    const stime = Number(fields[12]);
    const rss = /^VmRSS:\s+(\d+) kB$/m.exec(status);
    if (!Number.isFinite(utime) || !Number.isFinite(stime)) return undefined;
    return { cpuSeconds: (utime + stime) / USER_HZ, residentBytes: rss?.[1] === undefined ? 0 : Number(rss[1]) * 1024 };
  } catch {
    return undefined;
  }
}
