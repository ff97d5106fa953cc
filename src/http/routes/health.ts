import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { PtpMonitor } from '../../aes67/ptp-monitor.js';
import { healthWarnings, type EngineHealth } from '../../health.js';

const Nullable = <T extends ReturnType<typeof Type.String | typeof Type.Number>>(schema: T) => Type.Union([schema, Type.Null()]);

/** The host's PTP clock as ptp4l reports it (aes67/pmc.ts); absent on the dashboard port. */
const PtpHealth = Type.Object({
  state: Type.Union([Type.Literal('locked'), Type.Literal('unlocked'), Type.Literal('unavailable')]),
  grandmaster_id: Nullable(Type.String()),
  domain: Nullable(Type.Number()),
  offset_seconds: Nullable(Type.Number()),
  port_states: Type.Array(Type.String()),
  clock_id: Nullable(Type.String()),
  reason: Type.Optional(Type.String()),
});

const HealthResponse = Type.Object({
  status: Type.Union([Type.Literal('healthy'), Type.Literal('unhealthy')]),
  version: Type.String(),
  uptime: Type.String(),
  reason: Type.Optional(Type.String()),
  overloaded: Type.Optional(Type.Object({
    since: Type.String(),
    message: Type.String(),
    headroom_ratio: Type.Number(),
    capacity_cores: Type.Number(),
    reserve_cores: Type.Number(),
    other_programs_cores: Type.Number(),
    admitted_cores: Type.Number(),
    children_cores: Type.Number(),
    pipelines_behind: Type.Array(Type.String()),
  })),
  ptp: Type.Optional(PtpHealth),
  /** Worth a look, not a failure (an unlocked PTP clock, no real-time output thread). */
  warnings: Type.Optional(Type.Array(Type.String())),
  damaged_records: Type.Optional(Type.Array(Type.Object({ file: Type.String(), reason: Type.String() }))),
  /** Pipelines run and none's output thread runs real time (SCHED_FIFO): how many, and why. */
  realtime_refused: Type.Optional(Type.Object({ pipelines: Type.Number(), reason: Type.String() })),
});

export function healthRoutes(health: EngineHealth, ptp?: Pick<PtpMonitor, 'status'>): FastifyPluginAsyncTypebox {
  return async (app) => {
    const handler = async (): Promise<{ code: 200 | 503; body: typeof HealthResponse.static }> => {
      const report = await health.report();
      const warnings = healthWarnings(report, ptp?.status);
      const body = ptp === undefined ? { ...report, ...(warnings.length > 0 ? { warnings } : {}) } : { ...report, ptp: ptp.status, warnings };
      return { code: report.status === 'healthy' ? 200 : 503, body };
    };
    for (const url of ['/health', '/api/v1/health']) {
      app.get(url, { schema: { response: { 200: HealthResponse, 503: HealthResponse } } }, async (_request, reply) => {
        const { code, body } = await handler();
        return reply.code(code).send(body);
      });
    }
  };
}
