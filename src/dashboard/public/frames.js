// The tiles frames of the event stream: a tile's `view` comes only when it changed (and in the
// stream's first frame); a tile without one keeps the view it last had (src/http/routes/events.ts).

/**
 * The frame's tiles, each with its view: the one it carries (remembered in `views`, a Map of
 * `kind:id` -> view), else the remembered one. Tiles gone from the frame are forgotten.
 */
export function withViews(tiles, views) {
  const keys = new Set();
  const out = tiles.map((tile) => {
    const key = `${tile.kind}:${tile.id}`;
    keys.add(key);
    if (tile.view !== undefined) {
      views.set(key, tile.view);
      return tile;
    }
    return { ...tile, view: views.get(key) ?? {} };
  });
  for (const key of views.keys()) if (!keys.has(key)) views.delete(key);
  return out;
}
