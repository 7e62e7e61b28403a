/** Liveness and readiness (the page at `/` is the dashboard, routes/dashboard.ts). */
import type { FastifyInstance } from 'fastify';
import { loadMigrations } from '../../backends/shared/sql-files.js';
import type { ServiceContext } from '../context.js';
import * as S from '../api-schemas.js';
import { route } from '../routing.js';

/** The newest migration this build ships, per SQL store: readiness requires the store to have it. */
const MIGRATIONS: Record<string, URL> = {
  sqlite: new URL('../../backends/sqlite/migrations/', import.meta.url),
  postgres: new URL('../../backends/postgres/migrations/', import.meta.url),
};
const latest = new Map<string, number | null>();
const latestMigration = (kind: string): number | null => {
  if (!latest.has(kind)) {
    const dir = MIGRATIONS[kind];
    latest.set(kind, dir ? Math.max(0, ...loadMigrations(dir).map((m) => m.id)) : null);
  }
  return latest.get(kind)!;
};

export function healthRoutes(app: FastifyInstance, { dibs }: ServiceContext): void {
  route(app, { method: 'GET', url: '/healthz', scope: 'public', noRateLimit: true, tag: 'Operations', summary: 'Liveness: the process answers', responses: { 200: { description: 'The process answers', schema: S.healthSchema } } }, async () => ({ ok: true }));

  route(app, {
    method: 'GET', url: '/readyz', scope: 'public', noRateLimit: true, tag: 'Operations', summary: 'Readiness: the store is reachable and its migrations are applied',
    responses: { 200: { description: 'Ready', schema: S.readinessSchema }, 503: { description: 'Not ready (store down or schema behind)', schema: S.readinessSchema } },
  }, async (_request, reply) => {
    try {
      const health = await dibs.health();
      // A tiered store's schema is its ledger's (health names it).
      const expected = latestMigration(typeof health.details.ledger === 'string' ? health.details.ledger : dibs.kind);
      const migration = health.details.migration;
      const migrated = expected === null || (typeof migration === 'number' && migration >= expected);
      const ok = health.ok && migrated;
      return reply.status(ok ? 200 : 503).send({ ...health, ok, ...(expected === null ? {} : { migrations: { applied: migration ?? null, expected } }) });
    } catch (error) {
      return reply.status(503).send({ ok: false, backend: dibs.kind, details: { error: (error as Error).message } });
    }
  });
}
