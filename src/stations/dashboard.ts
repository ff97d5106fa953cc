/**
 * The dashboard edge (server.dashboard_port, 8000 by default): station management. A second
 * fastify instance built like the REST one (same error shape, same auth rule, same request log).
 *
 *   GET  /api/stations                      {"stations":[...]}  (beyond the interface)
 *   GET  /api/stations/{id}                 the station
 *   GET  /api/stations/{id}/logs?lines=N    text/plain, last N lines (1-10000, default 100)
 *   POST /api/stations/{id}/start           200 station; 409 `port 8101 is already in use...`
 *   POST /api/stations/{id}/restart         200 station (a new child)
 *   POST /api/stations/{id}/stop            200 station (beyond the interface)
 *   PATCH /api/stations/{id}                200 station + "applied": its processing parameters
 *                                           (live in the running child, or a restart)
 *   GET  /health                            as on the REST port (open, like there)
 *
 * And the operator's page (src/dashboard/, docs/dashboard.md): `/` and `/ui/*` (open: the page
 * asks for the key), GET /api/v1/events (the live stream), and the pipeline API routes of the
 * REST port, registered here from the same plugin (one validation path), so the page calls
 * its own origin.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { KeyRing } from '../auth/keys.js';
import type { EngineHealth } from '../health.js';
import { healthRoutes } from '../http/routes/health.js';
import { pipelineRoutes, type DescribePipeline } from '../http/routes/pipelines.js';
import { createHttpServer } from '../http/server.js';
import type { PipelineRegistry } from '../supervisor/registry.js';
import { VERSION } from '../version.js';
import { eventsRoutes } from '../dashboard/events.js';
import { LiveFeed, type FeedSource } from '../dashboard/live-feed.js';
import { findPageDir, PAGE_ROUTES, pageRoutes } from '../dashboard/static.js';
import type { Stations } from './stations.js';

const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 80 }) });
const LogsQuery = Type.Object(
  { lines: Type.Integer({ minimum: 1, maximum: 10000, default: 100 }) },
  { additionalProperties: false },
);

export function stationRoutes(stations: Stations): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get('/api/stations', async () => ({ stations: stations.list() }));
    app.get('/api/stations/:id', { schema: { params: IdParams } }, async (request) => stations.require(request.params.id).view());
    app.get('/api/stations/:id/logs', { schema: { params: IdParams, querystring: LogsQuery } }, async (request, reply) => {
      const lines = stations.require(request.params.id).logs(request.query.lines);
      return reply.type('text/plain; charset=utf-8').send(lines.length === 0 ? '' : `${lines.join('\n')}\n`);
    });
    app.post('/api/stations/:id/start', { schema: { params: IdParams } }, async (request) => stations.require(request.params.id).start());
    app.post('/api/stations/:id/restart', { schema: { params: IdParams } }, async (request) => stations.require(request.params.id).restart());
    app.addContentTypeParser('application/merge-patch+json', { parseAs: 'string' }, app.getDefaultJsonParser('error', 'error'));
    app.patch('/api/stations/:id', { schema: { params: IdParams } }, async (request) => {
      const { station, applied } = await stations.require(request.params.id).update(request.body);
      return { ...station, applied };
    });
    app.post('/api/stations/:id/stop', { schema: { params: IdParams } }, async (request) => stations.require(request.params.id).stop());
    // Starts the station's programme measurement (integrated loudness, LRA, max true peak) again.
    app.post('/api/stations/:id/loudness/reset', { schema: { params: IdParams } }, async (request) => {
      const { steps } = await stations.require(request.params.id).resetLoudness();
      return { id: request.params.id, reset: steps, reset_at: new Date().toISOString() };
    });
  };
}

export interface DashboardDeps {
  log: Logger;
  keys: KeyRing | undefined;
  health: EngineHealth;
  stations: Stations;
  pipelines: PipelineRegistry;
  /** The [dashboard] section of the configuration. */
  page: { meter_interval_ms: number; silence_alert_s: number };
  /** What the pipeline routes add to a pipeline's view (its SDP), as on the REST port. */
  describe: DescribePipeline;
}

/** Every pipeline, then every station, as the live feed reads them. */
function feedSources(pipelines: PipelineRegistry, stations: Stations): FeedSource[] {
  const sources: FeedSource[] = [];
  for (const { record, supervisor } of pipelines.entries()) {
    sources.push({ kind: 'pipeline', id: record.id, view: pipelines.get(record.id), stats: supervisor.stats });
  }
  for (const view of stations.list()) {
    sources.push({ kind: 'station', id: view.id, view, stats: stations.require(view.id).supervisor.stats });
  }
  return sources;
}

export async function buildDashboardServer(deps: DashboardDeps): Promise<FastifyInstance> {
  const app = createHttpServer(deps.log, 'dashboard', deps.keys, PAGE_ROUTES).withTypeProvider<TypeBoxTypeProvider>();
  await app.register(healthRoutes(deps.health));
  await app.register(stationRoutes(deps.stations));
  await app.register(pipelineRoutes(deps.pipelines, deps.describe));
  const feed = new LiveFeed(() => feedSources(deps.pipelines, deps.stations));
  await app.register(eventsRoutes({
    feed,
    version: VERSION,
    meterIntervalMs: deps.page.meter_interval_ms,
    silenceAlertS: deps.page.silence_alert_s,
  }));
  const pageDir = findPageDir();
  if (pageDir === undefined) deps.log.warn({ event: 'page-missing' }, 'the dashboard page is not built (dist/dashboard): run npm run build');
  else await app.register(async (scope) => pageRoutes(scope, pageDir));
  return app;
}
