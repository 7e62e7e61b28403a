/** Liveness, readiness and the status page. */
import type { FastifyInstance } from 'fastify';
import { readFileSync } from 'node:fs';
import type { Dibs } from '../../core/dibs.js';

const STATUS_PAGE = readFileSync(new URL('../status-page.html', import.meta.url), 'utf8');

export function healthRoutes(app: FastifyInstance, dibs: Dibs): void {
  app.get('/healthz', async () => ({ ok: true }));

  app.get('/readyz', async (_request, reply) => {
    try {
      const health = await dibs.health();
      return reply.status(health.ok ? 200 : 503).send(health);
    } catch (error) {
      return reply.status(503).send({ ok: false, backend: dibs.kind, details: { error: (error as Error).message } });
    }
  });

  app.get('/', async (_request, reply) => reply.type('text/html; charset=utf-8').send(STATUS_PAGE));
}
