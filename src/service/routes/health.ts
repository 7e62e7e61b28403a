/** Liveness and readiness (the page at `/` is the dashboard, routes/dashboard.ts). */
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../context.js';
import * as S from '../api-schemas.js';
import { route } from '../routing.js';

export function healthRoutes(app: FastifyInstance, { dibs }: ServiceContext): void {
  route(
    app,
    {
      method: 'GET',
      url: '/healthz',
      scope: 'public',
      noRateLimit: true,
      tag: 'Operations',
      summary: 'Liveness: the process answers',
      responses: { 200: { description: 'The process answers', schema: S.healthSchema } },
    },
    async () => ({ ok: true }),
  );

  route(
    app,
    {
      method: 'GET',
      url: '/readyz',
      scope: 'public',
      noRateLimit: true,
      tag: 'Operations',
      summary: 'Readiness: the store is reachable and its migrations are applied',
      responses: {
        200: { description: 'Ready', schema: S.readinessSchema },
        503: { description: 'Not ready (store down or schema behind)', schema: S.readinessSchema },
      },
    },
    async (_request, reply) => {
      try {
        const health = await dibs.health();
        // Stores with a versioned schema say which migration they have and which this build needs.
        const m = health.migrations;
        const migrated = m === undefined || (m.applied !== null && m.applied >= m.expected);
        const ok = health.ok && migrated;
        return reply.status(ok ? 200 : 503).send({ ...health, ok });
      } catch (error) {
        return reply.status(503).send({ ok: false, backend: dibs.kind, details: { error: (error as Error).message } });
      }
    },
  );
}
