/**
 * GET /api/v1/events: the page's one Server-Sent Events stream per browser tab, carrying every
 * pipeline and station at the meters' rate (10 Hz by default).
 *
 *   event: hello     {"version", "meter_interval_ms", "silence_alert_s", "history_step_s"}
 *   event: history   {"<kind>:<id>": {"t": [s...], "s": [LUFS|null...]}}   once, at connect
 *   event: tiles     {"t": ms since the epoch, "tiles": [Tile...]}          every tick
 *   : keep-alive                                                              every 15 s
 *
 * Latest values only: one frame is serialised per tick for all clients; a client whose socket
 * has not drained its previous frame skips this one (back-pressure: a slow tab gets fewer
 * frames, never a growing queue). Auth is the route's like any other (Authorization header):
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

    const send = (client: Client, text: string): void => {
      const socket = client.reply.raw;
      if (socket.writableNeedDrain || socket.destroyed) return; // skip: the next tick has newer values
      socket.write(text);
    };
    const tick = (): void => {
      const now = Date.now();
      const text = frame('tiles', { t: now, tiles: options.feed.tiles(now) });
      for (const client of clients) send(client, text);
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
      const client: Client = { reply };
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
