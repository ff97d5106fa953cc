/**
 * The last good element check, kept in the state folder and trusted at the next start while the
 * files it rests on are unchanged (the GStreamer registry and our plugin files: same size and
 * modification time). Health can then answer at once; a fresh check still runs in the background
 * and replaces it. Only a passing check is remembered: a failing one always runs again.
 */
import { readdir, readFile, stat, writeFile, rename } from 'node:fs/promises';
import path from 'node:path';
import type { GstCheck, GstEnvironment } from './environment.js';

const FILE = 'gst-check.json';

async function fingerprint(gst: GstEnvironment): Promise<string[]> {
  const files = [gst.env.GST_REGISTRY ?? ''];
  for (const dir of (gst.env.GST_PLUGIN_PATH ?? '').split(':').filter((d) => d !== '')) {
    const entries = await readdir(dir).catch(() => [] as string[]);
    files.push(...entries.filter((e) => e.endsWith('.so')).sort().map((e) => path.join(dir, e)));
  }
  return Promise.all(
    files.map(async (file) => {
      const s = await stat(file).catch(() => undefined);
      return `${file}:${s === undefined ? 'missing' : `${s.size}:${s.mtimeMs}`}`;
    }),
  );
}

export async function loadCheck(stateDir: string, gst: GstEnvironment): Promise<GstCheck | undefined> {
  try {
    const saved = JSON.parse(await readFile(path.join(stateDir, FILE), 'utf8')) as { key?: unknown; check?: GstCheck };
    const key = await fingerprint(gst);
    return saved.check?.ok === true && JSON.stringify(saved.key) === JSON.stringify(key) ? saved.check : undefined;
  } catch {
    return undefined;
  }
}

export async function saveCheck(stateDir: string, gst: GstEnvironment, check: GstCheck): Promise<void> {
  if (!check.ok) return;
  const file = path.join(stateDir, FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify({ key: await fingerprint(gst), check }));
  await rename(tmp, file);
}
