/**
 * The HTTP service: Fastify routes over one Dibs instance. `buildServer` makes the app (tests use
 * `app.inject`); `startServer` in server.ts adds listening, jobs and graceful shutdown.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Dibs } from '../core/dibs.js';
import { registerErrorHandling } from './errors.js';
import { healthRoutes } from './routes/health.js';
import { poolRoutes } from './routes/pools.js';
import { saleRoutes } from './routes/sales.js';
import { lockRoutes } from './routes/locks.js';

export interface ServerOptions {
  dibs: Dibs;
  logger?: FastifyServerOptions['logger'];
  /** Largest JSON body accepted (CSV imports stream and are not bounded by it). Default 1 MiB. */
  bodyLimit?: number;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;

export function buildServer({ dibs, logger = false, bodyLimit = 1024 * 1024 }: ServerOptions): FastifyInstance {
  const app = Fastify({
    logger,
    bodyLimit,
    // Honour a caller's request id (tracing across services), otherwise make one.
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    routerOptions: { ignoreTrailingSlash: true },
  });
  app.addHook('onRequest', async (request, reply) => {
    void reply.header('x-request-id', request.id);
  });
  // CSV imports: hand the raw request stream to the importer, which streams it into the store.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser(['text/csv', 'text/plain'], (_request, payload, done) => done(null, payload));
  registerErrorHandling(app);
  healthRoutes(app, dibs);
  poolRoutes(app, dibs);
  saleRoutes(app, dibs);
  lockRoutes(app, dibs);
  return app;
}
