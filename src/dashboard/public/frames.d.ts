// Types of frames.js (a plain ES module the browser runs) for the TypeScript tests that import it.
import type { Tile } from '../live-feed.js';

/** A tile as the stream sends it: its view only when that changed. */
export type FrameTile = Omit<Tile, 'view'> & { view?: Tile['view'] };

export function withViews(tiles: readonly FrameTile[], views: Map<string, Tile['view']>): Tile[];
