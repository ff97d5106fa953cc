/**
 * The page's side of the stream's tiles frames (src/dashboard/public/frames.js): a tile without
 * a view keeps the one it last had; a tile gone from the frame is forgotten.
 */
import t from 'tap';
import type { Tile } from '../../src/dashboard/live-feed.js';
import { withViews, type FrameTile } from '../../src/dashboard/public/frames.js';

const meters = { loudness: null, level: null, transport: null, failover: null, stats_age_ms: 10 };
const tile = (id: string, view?: Tile['view']): FrameTile => ({ kind: 'pipeline', id, ...meters, ...(view === undefined ? {} : { view }) });

void t.test('views are kept between frames and replaced when one comes', async (t) => {
  const views = new Map<string, Tile['view']>();
  const first = withViews([tile('a', { name: 'A', state: 'running' }), tile('b', { name: 'B', state: 'starting' })], views);
  t.same(first.map((x) => x.view), [{ name: 'A', state: 'running' }, { name: 'B', state: 'starting' }]);
  const second = withViews([tile('a'), tile('b', { name: 'B', state: 'running' })], views);
  t.same(second.map((x) => x.view), [{ name: 'A', state: 'running' }, { name: 'B', state: 'running' }], 'a keeps its view, b gets its new one');
  withViews([tile('b')], views);
  t.same([...views.keys()], ['pipeline:b'], 'a, gone from the frame, is forgotten');
  t.same(withViews([tile('c')], views)[0]?.view, {}, 'a tile whose view never came reads an empty view');
});
