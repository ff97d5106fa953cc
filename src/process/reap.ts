/**
 * Children of an earlier run of this engine that are still alive (the engine was killed before
 * it could end them, on a system without pdeathsig): found by the instance mark in their
 * environment, and killed before the pipelines start again.
 */
import { readdir, readFile } from 'node:fs/promises';

/** Marks a child as ours (its value: the engine's state folder), so leftovers of an earlier run can be found and ended. */
export const INSTANCE_VAR = 'AUDIO_ENGINE_INSTANCE';

export async function findLeftovers(stateDir: string): Promise<number[]> {
  const mark = `${INSTANCE_VAR}=${stateDir}`;
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return [];
  }
  const found: number[] = [];
  await Promise.all(
    entries.filter((e) => /^[0-9]+$/.test(e) && Number(e) !== process.pid).map(async (entry) => {
      try {
        const environ = await readFile(`/proc/${entry}/environ`, 'latin1');
        if (environ.split('\0').includes(mark)) found.push(Number(entry));
      } catch {
        // gone, or not ours to read
      }
    }),
  );
  return found.sort((a, b) => a - b);
}

export async function reapLeftovers(stateDir: string): Promise<number[]> {
  const pids = await findLeftovers(stateDir);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return pids;
}
