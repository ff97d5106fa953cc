/**
 * GET /api/v1/events over real HTTP (src/http/routes/events.ts): each client gets a tile's view in
 * its first frame and then only when the view changed; the meters come in every frame; a second
 * client starts with every view again.
 */
import Fastify from 'fastify';
import t from 'tap';
import { LiveFeed, type FeedSource } from '../../src/dashboard/live-feed.js';
import { eventsRoutes } from '../../src/http/routes/events.js';
import { PipelineStats } from '../../src/stats/pipeline-stats.js';

interface Frame {
  t: number;
  tiles: { kind: string; id: string; view?: Record<string, unknown>; stats_age_ms: number | null }[];
}

/** Reads `count` tiles frames from an open stream (bounded by the test's timeout). */
async function readFrames(url: string, count: number): Promise<{ frames: Frame[]; close: () => void }> {
  const controller = new AbortController();
  const response = await fetch(url, { signal: controller.signal });
  const reader = response.body?.pipeThrough(new TextDecoderStream()).getReader();
  if (reader === undefined) throw new Error('no body');
  const frames: Frame[] = [];
  let buffer = '';
  while (frames.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (block.startsWith('event: tiles') && data !== undefined) frames.push(JSON.parse(data) as Frame);
    }
  }
  return { frames, close: () => controller.abort() };
}

void t.test('views only when they change, meters every frame', async (t) => {
  const views: Record<string, Record<string, unknown>> = { a: { name: 'A', state: 'running' }, b: { name: 'B', state: 'running' } };
  const stats = new PipelineStats(100);
  const sources = (): FeedSource[] => ['a', 'b'].map((id) => ({ kind: 'pipeline', id, view: views[id] ?? {}, stats }));
  const app = Fastify();
  await app.register(eventsRoutes({ feed: new LiveFeed(sources), version: 'test', meterIntervalMs: 20, silenceAlertS: 10 }));
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());

  const first = await readFrames(`${address}/api/v1/events`, 3);
  const [f1, f2, f3] = first.frames;
  t.same(f1?.tiles.map((x) => x.view), [views.a, views.b], 'the first frame carries every view');
  t.same(f2?.tiles.map((x) => x.view), [undefined, undefined], 'unchanged: no view');
  t.same(f3?.tiles.map((x) => x.id), ['a', 'b'], 'the tiles are in every frame');
  t.ok(f3?.tiles.every((x) => 'stats_age_ms' in x), 'with their meters');

  views.b = { name: 'B', state: 'backoff', last_error: 'killed by SIGSEGV' };
  const more = await readFrames(`${address}/api/v1/events`, 1);
  t.same(more.frames[0]?.tiles.map((x) => x.view), [views.a, views.b], 'a second client starts with every view');
  more.close();

  first.close();
});

void t.test('a changed view reaches a connected client in its next frame, alone', async (t) => {
  const views: Record<string, Record<string, unknown>> = { a: { name: 'A', state: 'running' }, b: { name: 'B', state: 'running' } };
  const stats = new PipelineStats(100);
  const sources = (): FeedSource[] => ['a', 'b'].map((id) => ({ kind: 'pipeline', id, view: views[id] ?? {}, stats }));
  const app = Fastify();
  await app.register(eventsRoutes({ feed: new LiveFeed(sources), version: 'test', meterIntervalMs: 20, silenceAlertS: 10 }));
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  const controller = new AbortController();
  t.teardown(() => controller.abort());
  const response = await fetch(`${address}/api/v1/events`, { signal: controller.signal });
  const reader = response.body?.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  const seen: Frame[] = [];
  let changed = false;
  for (let reads = 0; reads < 500 && seen.filter((f) => f.tiles.some((x) => x.id === 'b' && x.view?.state === 'backoff')).length === 0; reads++) {
    const chunk = await reader?.read();
    if (chunk === undefined || chunk.done) break;
    buffer += chunk.value;
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (!block.startsWith('event: tiles') || data === undefined) continue;
      seen.push(JSON.parse(data) as Frame);
      if (seen.length === 3 && !changed) {
        views.b = { name: 'B', state: 'backoff' };
        changed = true;
      }
    }
  }
  const last = seen.at(-1);
  t.same(last?.tiles.map((x) => x.view), [undefined, { name: 'B', state: 'backoff' }], 'only b\'s view, the new one');
  t.ok(seen.slice(1, -1).every((f) => f.tiles.every((x) => x.view === undefined)), `no view in the ${seen.length - 2} frames between`);
});
