/**
 * The dashboard edge (server.dashboard_port, 8000 by default): station management. A second
 * fastify instance built like the REST one (same error shape, same auth rule, same request log),
 * composed in app.ts. It serves:
 *
 *   /api/stations...                        the station routes (routes/stations.ts)
 *   GET  /health                            as on the REST port (open, like there)
 *
 * And the operator's page (src/dashboard/public, docs/dashboard.md): `/` and `/ui/*` (open: the
 * page asks for the key; routes/page.ts), GET /api/v1/events (the live stream; routes/events.ts,
 * over dashboard/live-feed.ts), and the pipeline API routes of the REST port, registered here
 * from the same plugin (one validation path), so the page calls its own origin.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { KeyRing } from '../auth/keys.js';
import { LiveFeed, type FeedSource } from '../dashboard/live-feed.js';
import type { EngineHealth } from '../health.js';
import type { Stations } from '../stations/stations.js';
import type { PipelineRegistry } from '../pipelines/registry.js';
import { VERSION } from '../version.js';
import { eventsRoutes } from './routes/events.js';
import { healthRoutes } from './routes/health.js';
import { findPageDir, PAGE_ROUTES, pageRoutes } from './routes/page.js';
import { pipelineRoutes, type DescribePipeline } from './routes/pipelines.js';
import { stationRoutes } from './routes/stations.js';
import { createHttpServer } from './server.js';

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
  for (const { record, managed } of pipelines.entries()) {
    sources.push({ kind: 'pipeline', id: record.id, view: pipelines.get(record.id), stats: managed.stats });
  }
  for (const view of stations.list()) {
    sources.push({ kind: 'station', id: view.id, view, stats: stations.require(view.id).managed.stats });
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
