/**
 * Prometheus metrics (prom-client), one registry per server so several servers in one process
 * (tests) do not collide. Store-derived gauges (free units per pool, outbox lag) are read when
 * scraped, not kept up to date on every request.
 */
import cluster from 'node:cluster';
import type { FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Dibs } from '../core/dibs.js';
import { isDibsError } from '../core/errors.js';
import { localName } from '../core/schemas.js';
import { DEFAULT_TENANT } from './auth/keys.js';

/** Most pools reported by `dibs_pool_free_units` (a scrape must stay cheap). */
const MAX_POOLS = 1000;

export class ServiceMetrics {
  readonly registry = new Registry();
  readonly claims: Counter<'kind' | 'outcome'>;
  readonly claimSeconds: Histogram<'kind'>;
  readonly requestSeconds: Histogram<'method' | 'route' | 'status'>;
  readonly lockWaiters: Gauge;

  constructor(dibs: Dibs) {
    const registers = [this.registry];
    // `serve --workers N`: each worker answers scrapes with its own series, told apart by this label.
    if (cluster.isWorker) this.registry.setDefaultLabels({ worker: String(cluster.worker!.id) });
    collectDefaultMetrics({ register: this.registry, prefix: 'dibs_' });
    this.claims = new Counter({
      name: 'dibs_claims_total',
      help: 'Claims (pool codes, sale purchases and reservations) by outcome',
      labelNames: ['kind', 'outcome'],
      registers,
    });
    this.claimSeconds = new Histogram({
      name: 'dibs_claim_duration_seconds',
      help: 'Time to answer a claim, store included',
      labelNames: ['kind'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.requestSeconds = new Histogram({
      name: 'dibs_http_request_duration_seconds',
      help: 'HTTP request latency by route',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.lockWaiters = new Gauge({
      name: 'dibs_lock_waiters',
      help: 'Lock/semaphore acquire requests of this instance waiting for a slot',
      registers,
    });
    new Gauge({
      name: 'dibs_pool_free_units',
      help: `Free codes per pool and tenant (first ${MAX_POOLS} pools)`,
      labelNames: ['tenant', 'pool'],
      registers,
      async collect() {
        this.reset();
        let after: string | undefined;
        for (let seen = 0; seen < MAX_POOLS; ) {
          const page = await dibs.pools.list({ limit: Math.min(1000, MAX_POOLS - seen), ...(after ? { after } : {}) });
          for (const pool of page.items) {
            const local = localName(pool.name);
            this.set(
              {
                tenant: local === pool.name ? DEFAULT_TENANT : pool.name.slice(0, pool.name.length - local.length - 1),
                pool: local,
              },
              pool.stats.free,
            );
          }
          seen += page.items.length;
          if (!page.nextCursor) break;
          after = page.nextCursor;
        }
      },
    });
    const outbox = dibs.backend.outbox;
    const lag = new Gauge({
      name: 'dibs_outbox_lag_seconds',
      help: 'Age of the oldest undelivered outbox event (0 when none)',
      registers,
    });
    new Gauge({
      name: 'dibs_outbox_pending_events',
      help: 'Outbox events waiting for delivery',
      registers,
      async collect() {
        const status = await outbox.status();
        this.set(status.pending);
        lag.set(status.oldestPendingMs / 1000);
      },
    });
  }

  /** Times a claim and counts its outcome: the result's status, or the error code. */
  async claim<T>(
    kind: 'pool' | 'sale' | 'reservation' | 'cart',
    fn: () => Promise<T>,
    outcomeOf: (result: T) => string,
  ): Promise<T> {
    const end = this.claimSeconds.startTimer({ kind });
    try {
      const result = await fn();
      this.claims.inc({ kind, outcome: outcomeOf(result) });
      return result;
    } catch (error) {
      this.claims.inc({ kind, outcome: isDibsError(error) ? error.code : 'error' });
      throw error;
    } finally {
      end();
    }
  }

  register(app: FastifyInstance): void {
    app.addHook('onResponse', (request, reply, done) => {
      const route = request.routeOptions.url ?? 'unknown';
      this.requestSeconds.observe(
        { method: request.method, route, status: String(reply.statusCode) },
        reply.elapsedTime / 1000,
      );
      done();
    });
  }
}
