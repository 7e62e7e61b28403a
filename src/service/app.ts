/**
 * The HTTP service: Fastify routes over one Dibs instance. `buildServer` makes the app (tests use
 * `app.inject`); `startServer` in server.ts adds listening, jobs and graceful shutdown.
 *
 * Request path: request id → auth (key → tenant + scopes; routing.ts declares each route's scope)
 * → rate limit per key → body parsing → idempotency (Idempotency-Key) → handler (names
 * namespaced per tenant) → answer with names made local again → metrics.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import Fastify, {
  LogController,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import rateLimit from '@fastify/rate-limit';
import type { Dibs } from '../core/dibs.js';
import { DibsError } from '../core/errors.js';
import type { ServiceStore } from '../core/service-store.js';
import { KeyVerifier } from './auth/keys.js';
import { registerAuth } from './auth/hooks.js';
import type { ServiceContext } from './context.js';
import { registerErrorHandling } from './errors.js';
import { inFlightTtl, registerIdempotency, type IdempotencyOptions } from './idempotency.js';
import { ServiceMetrics } from './metrics.js';
import { buildOpenApi } from './openapi.js';
import { requestLogger } from './request-logger.js';
import { route } from './routing.js';
import { sharedRateLimitStore } from './rate-limit-store.js';
import { healthRoutes } from './routes/health.js';
import { keyRoutes } from './routes/keys.js';
import { poolRoutes } from './routes/pools.js';
import { saleRoutes } from './routes/sales.js';
import { cartRoutes } from './routes/carts.js';
import { lockRoutes } from './routes/locks.js';
import { limitRoutes } from './routes/limits.js';
import { waitingRoomRoutes } from './routes/waiting-room.js';
import { forecastRoutes } from './routes/forecast.js';
import { lifecycleRoutes } from './routes/lifecycle.js';
import { dashboardRoutes } from './routes/dashboard.js';
import type { DeliveryStats } from '../notify/delivery-stats.js';
import { isTraced } from '../tracing/instrument.js';
import { registerHttpTracing } from '../tracing/http.js';
import { activeOtel } from '../tracing/otel.js';

export interface RateLimitOptions {
  /** Requests per API key per window (default 6000, i.e. 100/s averaged over a minute). */
  max: number;
  /** Window length (default 60 000 ms). */
  timeWindowMs: number;
}

export interface ServerOptions {
  dibs: Dibs;
  logger?: FastifyServerOptions['logger'];
  /** Largest JSON body accepted (CSV imports stream and are not bounded by it). Default 1 MiB. */
  bodyLimit?: number;
  /** Where keys and idempotency records live; default: the store's own (`dibs.backend.service`). */
  serviceStore?: ServiceStore;
  /** Per-key rate limit, or false for none. Shared across instances on PostgreSQL and Redis (ServiceStore.hitRateLimit); per instance otherwise. */
  rateLimit?: RateLimitOptions | false;
  idempotency?: Partial<IdempotencyOptions>;
  /** How long a verified key is trusted without reading the store (revocation delay on other instances). */
  keyCacheMs?: number;
  /** Serve /metrics without a key (default false: needs `metrics:read` or `admin`). */
  metricsPublic?: boolean;
  /** The outbox dispatcher's per-endpoint counts, when this process runs one (GET /v1/outbox/endpoints). */
  deliveryStats?: DeliveryStats;
}

const REQUEST_ID = /^[\w.:-]{1,128}$/;
export const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
const REFERENCE_PAGE = readFileSync(new URL('./reference-page.html', import.meta.url), 'utf8');

/**
 * The access log: one line per request when it completes, at info, with the request (method, url,
 * host, remote address — never headers), its status and time. Fastify's default writes an
 * "incoming request" line as well: at the default level (info) that doubled the logging cost of
 * every request, and the completion line alone says everything (a request that never completes
 * is not lost: Fastify still logs aborts and errors).
 */
class AccessLog extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error)
      reply.log.error({ req: request, res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    else reply.log.info({ req: request, res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

export const DEFAULT_RATE_LIMIT: RateLimitOptions = { max: 6000, timeWindowMs: 60_000 };

export function buildServer(options: ServerOptions): FastifyInstance {
  const { dibs, logger = false, bodyLimit = 1024 * 1024 } = options;
  const store = options.serviceStore ?? dibs.backend.service;
  // Aborted when closing begins (preClose below): requests that only wait stop, new ones are refused.
  const closing = new AbortController();
  const app = Fastify({
    logger,
    ...(logger ? { childLoggerFactory: requestLogger } : {}),
    logController: new AccessLog(),
    bodyLimit,
    // Honour a caller's request id (tracing across services), otherwise make one.
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    routerOptions: { ignoreTrailingSlash: true },
    return503OnClosing: false, // answered by the onRequest hook below, in dibs' error shape
    // Errors raised before routing (a malformed URL such as `/v1/pools/%`) skip the error
    // handler: give them the error shape too. (Found by the fuzz test.)
    frameworkErrors: (error, _request, reply) => {
      void (reply as unknown as FastifyReply).status(400).send({
        error: {
          code: 'invalid_input',
          message: error.code === 'FST_ERR_BAD_URL' ? `the URL is malformed: ${error.message}` : error.message,
        },
      });
    },
  });
  app.decorate('routeDocs', []);
  // First, so the request's span covers every hook after it (auth, rate limit, idempotency).
  const otel = isTraced(dibs) ? activeOtel() : null;
  if (otel) registerHttpTracing(app, otel, VERSION);
  // Hot-path hooks are callback-style: no promise per request when there is nothing to await.
  app.addHook('onRequest', (request, reply, done) => {
    void reply.header('x-request-id', request.id);
    // A request arriving during the shutdown on a connection still open (pipelined, or racing the
    // close) is not run: 503 `unavailable` in the error shape, with Retry-After (Fastify's own
    // load-shedding answer, turned off above, has another body).
    if (closing.signal.aborted) return done(closing.signal.reason as Error);
    done();
  });
  // Graceful close: Fastify closes the connections idle when closing begins, but a keep-alive
  // connection whose request was still in flight goes idle afterwards and would hold the close
  // (and a SIGTERMed worker) open for the whole keep-alive timeout, 72 s, while its client waits to
  // reuse it. From now on a connection that goes idle is closed at once (Node reads the server's
  // keepAliveTimeout as each response finishes; 0 would mean "never").
  // Requests that only wait (a lock acquire with `waitMs`, up to 24 h) would hold the close for
  // as long: they are told to stop waiting (503, retriable) when closing begins.
  app.addHook('preClose', (done) => {
    app.server.keepAliveTimeout = 1;
    closing.abort(
      new DibsError('unavailable', 'the service is shutting down; retry (another instance will answer)', {
        retriable: true,
      }),
    );
    done();
  });
  // CSV imports: hand the raw request stream to the importer, which streams it into the store.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser(['text/csv', 'text/plain'], (_request, payload, done) => done(null, payload));
  registerErrorHandling(app);

  const verifier = new KeyVerifier(store, options.keyCacheMs ?? 5000);
  const metrics = new ServiceMetrics(dibs);
  const context: ServiceContext = {
    dibs,
    store,
    verifier,
    metrics,
    closing: closing.signal,
    ...(options.deliveryStats ? { deliveryStats: options.deliveryStats } : {}),
  };
  registerAuth(app, verifier);
  metrics.register(app);
  // Answers carry the caller's names, never the namespaced ones.
  app.addHook('preSerialization', (request, _reply, payload, done) =>
    done(null, request.tenant?.prefix ? request.tenant.external(payload) : payload),
  );

  const limits = options.rateLimit === undefined ? DEFAULT_RATE_LIMIT : options.rateLimit;
  if (limits) {
    void app.register(rateLimit, {
      global: true,
      hook: 'onRequest', // after the (root) auth hook: the limit is per API key
      max: limits.max,
      timeWindow: limits.timeWindowMs,
      keyGenerator: (request) => (request.principal ? `key:${request.principal.keyId}` : `ip:${request.ip}`),
      ...(store.hitRateLimit ? { store: sharedRateLimitStore(store) as never } : {}),
      errorResponseBuilder: (_request, context) =>
        new DibsError(
          'rate_limited',
          `rate limit of ${context.max} requests per ${context.after} exceeded; retry after the Retry-After seconds`,
          { retriable: true, details: { limit: context.max } },
        ),
    });
  }
  registerIdempotency(app, store, {
    ttlMs: options.idempotency?.ttlMs ?? 24 * 3600_000,
    inFlightTtlMs: inFlightTtl(options.idempotency?.inFlightTtlMs, dibs.backend.operationTimeoutMs),
  });

  // Routes in a plugin registered after the rate limiter, so its onRoute hook sees every route.
  void app.register(async (api) => {
    healthRoutes(api, context);
    keyRoutes(api, context);
    poolRoutes(api, context);
    saleRoutes(api, context);
    cartRoutes(api, context);
    lockRoutes(api, context);
    limitRoutes(api, context);
    waitingRoomRoutes(api, context);
    forecastRoutes(api, context);
    lifecycleRoutes(api, context);
    dashboardRoutes(api, context);
    route(
      api,
      {
        method: 'GET',
        url: '/metrics',
        scope: options.metricsPublic ? 'public' : 'metrics:read',
        noRateLimit: true,
        tag: 'Operations',
        summary: 'Prometheus metrics (text exposition format)',
        responses: { 200: { description: 'Metrics', contentType: 'text/plain' } },
      },
      async (_request, reply) => reply.type(metrics.registry.contentType).send(await metrics.registry.metrics()),
    );
    let openapi: unknown;
    route(
      api,
      {
        method: 'GET',
        url: '/openapi.json',
        scope: 'public',
        noRateLimit: true,
        tag: 'Operations',
        summary: 'This OpenAPI 3.1 document',
        responses: { 200: { description: 'OpenAPI document' } },
      },
      async () => (openapi ??= buildOpenApi(app.routeDocs, VERSION)),
    );
    api.get('/docs', { config: { rateLimit: false } as never }, async (_request, reply) =>
      reply.type('text/html; charset=utf-8').send(REFERENCE_PAGE),
    );
  });
  return app;
}
