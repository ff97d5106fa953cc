/**
 * One file written so that, once the write resolves, it survives a crash or power loss: a temp
 * file beside it (its mode set whatever the umask), fsync, rename over the file, fsync of the
 * folder. On failure nothing half-made stays (neither the temp file nor a file whose durability is
 * unknown) and the error is thrown on. The pipeline store and the station values store use it.
 */
import { open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';

export async function syncFolder(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export async function writeDurably(file: string, body: string, mode: number): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  let renamed = false;
  try {
    const handle = await open(tmp, 'w', mode);
    try {
      await handle.chmod(mode); // whatever the umask, or a stale temp file, left
      await handle.writeFile(body, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, file);
    renamed = true;
    await syncFolder(path.dirname(file));
  } catch (error) {
    await unlink(renamed ? file : tmp).catch(() => undefined);
    await syncFolder(path.dirname(file)).catch(() => undefined);
    throw error;
  }
}
