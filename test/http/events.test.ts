/**
 * GET /api/v1/events over real HTTP (src/http/routes/events.ts): each client gets a tile's view in
 * its first frame and then only when the view changed; the meters come in every frame; a second
 * client starts with every view again.
 */
import Fastify from 'fastify';
import t, { type Test } from 'tap';
import { LiveFeed, type FeedSource } from '../../src/dashboard/live-feed.js';
import { eventsRoutes } from '../../src/http/routes/events.js';
import { PipelineStats } from '../../src/stats/pipeline-stats.js';

interface Frame {
  t: number;
  tiles: { kind: string; id: string; view?: Record<string, unknown>; stats_age_ms: number | null }[];
}

/** The tiles frames of one open stream, read one at a time. */
class TilesFrames {
  private buffer = '';
  private readonly ready: Frame[] = [];

  private constructor(
    private readonly reader: ReadableStreamDefaultReader<string>,
    readonly close: () => void,
  ) {}

  static async open(url: string): Promise<TilesFrames> {
    const controller = new AbortController();
    const response = await fetch(url, { signal: controller.signal });
    const reader = response.body?.pipeThrough(new TextDecoderStream()).getReader();
    if (reader === undefined) throw new Error('no body');
    return new TilesFrames(reader, () => controller.abort());
  }

  /** The next tiles frame (bounded by the test's timeout). */
  async next(): Promise<Frame> {
    for (;;) {
      const frame = this.ready.shift();
      if (frame !== undefined) return frame;
      const { value, done } = await this.reader.read();
      if (done) throw new Error('the stream ended');
      this.buffer += value;
      for (let end = this.buffer.indexOf('\n\n'); end >= 0; end = this.buffer.indexOf('\n\n')) {
        const block = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 2);
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (block.startsWith('event: tiles') && data !== undefined) this.ready.push(JSON.parse(data) as Frame);
      }
    }
  }
}

/** The events route over real HTTP for two pipelines `a` and `b` whose views the test changes. */
async function serveTwoPipelines(t: Test): Promise<{ views: Record<string, Record<string, unknown>>; address: string }> {
  const views: Record<string, Record<string, unknown>> = { a: { name: 'A', state: 'running' }, b: { name: 'B', state: 'running' } };
  const stats = new PipelineStats(100);
  const sources = (): FeedSource[] => ['a', 'b'].map((id) => ({ kind: 'pipeline', id, view: views[id] ?? {}, stats }));
  const app = Fastify();
  await app.register(eventsRoutes({ feed: new LiveFeed(sources), version: 'test', meterIntervalMs: 20, silenceAlertS: 10 }));
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  return { views, address };
}

void t.test('views only when they change, meters every frame', async (t) => {
  const { views, address } = await serveTwoPipelines(t);

  const first = await TilesFrames.open(`${address}/api/v1/events`);
  const [f1, f2, f3] = [await first.next(), await first.next(), await first.next()];
  t.same(f1?.tiles.map((x) => x.view), [views.a, views.b], 'the first frame carries every view');
  t.same(f2?.tiles.map((x) => x.view), [undefined, undefined], 'unchanged: no view');
  t.same(f3?.tiles.map((x) => x.id), ['a', 'b'], 'the tiles are in every frame');
  t.ok(f3?.tiles.every((x) => 'stats_age_ms' in x), 'with their meters');

  views.b = { name: 'B', state: 'backoff', last_error: 'killed by SIGSEGV' };
  const more = await TilesFrames.open(`${address}/api/v1/events`);
  t.same((await more.next()).tiles.map((x) => x.view), [views.a, views.b], 'a second client starts with every view');
  more.close();

  first.close();
});

void t.test('a changed view reaches a connected client in its next frame, alone', async (t) => {
  const { views, address } = await serveTwoPipelines(t);
  const frames = await TilesFrames.open(`${address}/api/v1/events`);
  t.teardown(() => frames.close());
  const seen: Frame[] = [];
  for (let n = 0; n < 500 && !seen.some((f) => f.tiles.some((x) => x.id === 'b' && x.view?.state === 'backoff')); n++) {
    seen.push(await frames.next());
    if (seen.length === 3) views.b = { name: 'B', state: 'backoff' };
  }
  const last = seen.at(-1);
  t.same(last?.tiles.map((x) => x.view), [undefined, { name: 'B', state: 'backoff' }], 'only b\'s view, the new one');
  t.ok(seen.slice(1, -1).every((f) => f.tiles.every((x) => x.view === undefined)), `no view in the ${seen.length - 2} frames between`);
});
