/**
 * GET /api/v1/events: the page's one Server-Sent Events stream per browser tab, carrying every
 * pipeline and station at the meters' rate (10 Hz by default).
 *
 *   event: hello     {"version", "meter_interval_ms", "silence_alert_s", "history_step_s"}
 *   event: history   {"<kind>:<id>": {"t": [s...], "s": [LUFS|null...]}}   once, at connect
 *   event: tiles     {"t": ms since the epoch, "tiles": [Tile...]}          every tick
 *   : keep-alive                                                              every 15 s
 *
 * A tile's `view` (the pipeline's or station's GET answer: a few kB that rarely change) is sent
 * to a client only when it differs from the one that client last got, and in its first frame;
 * a tile without `view` keeps the last one. The meters (a few hundred bytes a tile) come in
 * every frame. At 48 pipelines this is what keeps the stream, and the page parsing it, cheap
 * (docs/dashboard.md).
 *
 * Latest values only: each tile's meters and view are serialised once per tick for all clients;
 * a client whose socket has not drained its previous frame skips this one (back-pressure: a slow
 * tab gets fewer frames, never a growing queue). Auth is the route's like any other (Authorization header):
 * the page reads the stream with fetch(), so no key ever sits in a URL.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { HISTORY_STEP_MS, type LiveFeed } from '../../dashboard/live-feed.js';

export const KEEP_ALIVE_MS = 15_000;

export interface EventsOptions {
  feed: LiveFeed;
  version: string;
  meterIntervalMs: number;
  silenceAlertS: number;
}

interface Client {
  reply: FastifyReply;
  /** The view (as JSON) this client last got, per tile key. */
  views: Map<string, string>;
}

/** One tile of a tick, serialised once: its fields but the view, and its view. */
interface TileText {
  key: string;
  /** `{...}` without `view`. */
  rest: string;
  view: string;
}

/** The tiles frame for one client: each tile's view only where it changed for that client (then remembered). */
function tilesFrame(now: number, tiles: readonly TileText[], client: Client): string {
  const parts = tiles.map(({ key, rest, view }) => {
    if (client.views.get(key) === view) return rest;
    client.views.set(key, view);
    return `${rest.slice(0, -1)},"view":${view}}`; // rest has kind and id: never `{}`
  });
  if (client.views.size > tiles.length) {
    const keys = new Set(tiles.map((tile) => tile.key));
    for (const key of client.views.keys()) if (!keys.has(key)) client.views.delete(key);
  }
  return `event: tiles\ndata: {"t":${now},"tiles":[${parts.join(',')}]}\n\n`;
}

const frame = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

export function eventsRoutes(options: EventsOptions): (app: FastifyInstance) => Promise<void> {
  return async (app) => {
    const clients = new Set<Client>();
    let ticker: NodeJS.Timeout | undefined;
    let keepAlive: NodeJS.Timeout | undefined;
    // History is sampled whether or not a page is open: a tab opened later sees the last 10 min.
    const sampler = setInterval(() => options.feed.sample(Date.now()), HISTORY_STEP_MS);
    sampler.unref();

    const writable = (client: Client): boolean => !client.reply.raw.writableNeedDrain && !client.reply.raw.destroyed;
    const send = (client: Client, text: string): void => {
      if (writable(client)) client.reply.raw.write(text); // else skip: the next tick has newer values
    };
    const tick = (): void => {
      const now = Date.now();
      const tiles: TileText[] = options.feed.tiles(now).map(({ view, ...rest }) => ({
        key: `${rest.kind}:${rest.id}`,
        rest: JSON.stringify(rest),
        view: JSON.stringify(view),
      }));
      for (const client of clients) if (writable(client)) client.reply.raw.write(tilesFrame(now, tiles, client));
    };
    const startTimers = (): void => {
      ticker ??= setInterval(tick, options.meterIntervalMs);
      keepAlive ??= setInterval(() => {
        for (const client of clients) send(client, ': keep-alive\n\n');
      }, KEEP_ALIVE_MS);
    };
    const stopTimers = (): void => {
      clearInterval(ticker);
      clearInterval(keepAlive);
      ticker = undefined;
      keepAlive = undefined;
    };

    app.get('/api/v1/events', async (request, reply) => {
      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache, no-transform',
        Connection: 'keep-alive',
        'X-Accel-Buffering': 'no',
      });
      const client: Client = { reply, views: new Map() };
      raw.write('retry: 2000\n\n');
      raw.write(frame('hello', {
        version: options.version,
        meter_interval_ms: options.meterIntervalMs,
        silence_alert_s: options.silenceAlertS,
        history_step_s: HISTORY_STEP_MS / 1000,
      }));
      raw.write(frame('history', options.feed.historySnapshot()));
      clients.add(client);
      startTimers();
      const started = Date.now();
      raw.once('close', () => {
        clients.delete(client);
        if (clients.size === 0) stopTimers();
        request.log.info({ event: 'events-closed', seconds: Math.round((Date.now() - started) / 1000) }, 'event stream closed');
      });
      tick();
    });

    // Before the server stops listening: open streams would otherwise hold close() up.
    app.addHook('preClose', async () => {
      clearInterval(sampler);
      stopTimers();
      for (const client of clients) client.reply.raw.end();
      clients.clear();
    });
  };
}
