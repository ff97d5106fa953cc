import { utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { loadCheck, saveCheck } from '../../src/gst/check-cache.js';
import { gstEnvironment, listedElements, type GstCheck } from '../../src/gst/environment.js';

const good: GstCheck = { ok: true, missing: [], reason: undefined };

void t.test('a good check is trusted only while the registry and plugin files are unchanged', async (t) => {
  const dir = t.testdir({ plugins: { 'libgstaudioengine.so': 'v1' }, 'gst-registry-x64.bin': 'r' });
  const gst = gstEnvironment(dir, { AUDIO_ENGINE_PLUGIN_PATH: path.join(dir, 'plugins') });
  gst.env.GST_REGISTRY = path.join(dir, 'gst-registry-x64.bin');
  t.equal(await loadCheck(dir, gst), undefined, 'nothing remembered yet');
  await saveCheck(dir, gst, good);
  t.match(await loadCheck(dir, gst), { ok: true, missing: [] });
  const plugin = path.join(dir, 'plugins', 'libgstaudioengine.so');
  writeFileSync(plugin, 'v2 rebuilt');
  t.equal(await loadCheck(dir, gst), undefined, 'a rebuilt plugin invalidates it');
  await saveCheck(dir, gst, good);
  utimesSync(gst.env.GST_REGISTRY, new Date(), new Date(Date.now() + 5000));
  t.equal(await loadCheck(dir, gst), undefined, 'a rewritten registry invalidates it');
  await saveCheck(dir, gst, { ok: false, missing: ['loudnorm'], reason: 'x' });
  t.equal(await loadCheck(dir, gst), undefined, 'a failing check is never remembered');
});

void t.test('the element listing of gst-inspect-1.0 is read by name', async (t) => {
  const names = listedElements('audioengine:  loudnorm: EBU R128 loudness normaliser\nsrt:  srtsrc: SRT source\n\nTotal count: 2 plugins\n');
  t.same([...names].sort(), ['loudnorm', 'srtsrc']);
});
