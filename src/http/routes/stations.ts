/**
 * The station routes of the dashboard port (http/dashboard-server.ts; docs/stations.md):
 *
 *   GET  /api/stations                      {"stations":[...]}  (beyond the interface)
 *   GET  /api/stations/{id}                 the station
 *   GET  /api/stations/{id}/logs?lines=N    text/plain, last N lines (1-10000, default 100)
 *   POST /api/stations/{id}/start           200 station; 409 `port 8101 is already in use...`
 *   POST /api/stations/{id}/restart         200 station (a new child)
 *   POST /api/stations/{id}/stop            200 station (beyond the interface)
 *   PATCH /api/stations/{id}                200 station + "applied": its processing parameters
 *                                           (live in the running child, or a restart)
 */
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Stations } from '../../stations/stations.js';

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
