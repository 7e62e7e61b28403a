/**
 * Prometheus metrics (prom-client), one registry per server so several servers in one process
 * (tests) do not collide. Store-derived gauges (free units per pool, outbox lag) are read when
 * scraped, not kept up to date on every request.
 */
import cluster from 'node:cluster';
import type { FastifyInstance } from 'fastify';
import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { Dibs } from '../core/dibs.js';
import { isDibsError } from '../core/errors.js';
import { localName } from '../core/schemas.js';
import { DEFAULT_TENANT } from './auth/keys.js';

/** Most pools reported by `dibs_pool_free_units` (a scrape must stay cheap). */
const MAX_POOLS = 1000;

/** One exported value, as prom-client's Registry reads it. */
interface MetricValue {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName?: string;
}

/** Label values joined into one map key (no label value here contains NUL). */
const cellKey = (values: readonly string[]) => (values.length === 1 ? values[0]! : values.join('\u0000'));

/**
 * A metric counted through a cell per label set: the hot path looks the cell up once by its label
 * values and counts into it. prom-client's own `observe`/`inc` validate and hash the label object
 * on every call, and a histogram finds its bucket by the bound used as a property name (a float
 * turned into a string, twice): 1–2.5 µs per observation, and a claim request made three of them.
 * Registered in a prom-client Registry and exported in prom-client's shape (`get`), so the
 * registry writes the same text. Only the cell API is offered: nothing can count past it.
 */
abstract class CellMetric<L extends string, C> {
  readonly aggregator = 'sum';
  private readonly cells = new Map<string, C>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'histogram',
    private readonly labelNames: readonly L[],
    registers: Registry[],
  ) {
    for (const registry of registers) registry.registerMetric(this as never);
  }

  protected abstract newCell(labels: Record<string, string>): C;
  protected abstract exported(cell: C): MetricValue[];

  /** The cell of one label set, values in `labelNames` order, made on first use. */
  protected cellOf(values: readonly string[]): C {
    const key = cellKey(values);
    let cell = this.cells.get(key);
    if (!cell) {
      if (values.length !== this.labelNames.length)
        throw new Error(`${this.name}: ${this.labelNames.length} label values expected, got ${values.length}`);
      const labels = Object.fromEntries(this.labelNames.map((label, i) => [label, values[i]!]));
      this.cells.set(key, (cell = this.newCell(labels)));
    }
    return cell;
  }

  /** What prom-client's Registry writes as text (`values` as prom-client's own metrics give them). */
  async getForPromString() {
    const values: MetricValue[] = [];
    for (const cell of this.cells.values()) values.push(...this.exported(cell));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The metric as JSON (`Registry.getMetricsAsJSON`): each value's shared labels folded into its labels. */
  async get() {
    const metric = await this.getForPromString();
    return {
      ...metric,
      values: metric.values.map(({ sharedLabels, ...value }) => ({
        ...value,
        labels: { ...value.labels, ...sharedLabels },
      })),
    };
  }

  reset(): void {
    this.cells.clear();
  }
}

export class CellCounter<L extends string> extends CellMetric<L, { labels: Record<string, string>; value: number }> {
  constructor(config: { name: string; help: string; labelNames: readonly L[]; registers: Registry[] }) {
    super(config.name, config.help, 'counter', config.labelNames, config.registers);
  }

  /** Adds 1 to the count of one label set (values in `labelNames` order). */
  inc(...values: string[]): void {
    this.cellOf(values).value++;
  }

  protected newCell(labels: Record<string, string>) {
    return { labels, value: 0 };
  }

  protected exported({ labels, value }: { labels: Record<string, string>; value: number }): MetricValue[] {
    return [{ labels: { ...labels }, value }];
  }
}

/** One label set of a CellHistogram: counts per bucket (not cumulative; the last slot is above every bound). */
export class HistogramCell {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Record<string, string>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

export class CellHistogram<L extends string> extends CellMetric<L, HistogramCell> {
  private readonly bounds: readonly number[];

  constructor(config: {
    name: string;
    help: string;
    labelNames: readonly L[];
    buckets: number[];
    registers: Registry[];
  }) {
    super(config.name, config.help, 'histogram', config.labelNames, config.registers);
    this.bounds = [...config.buckets].sort((a, b) => a - b);
  }

  /** The cell of one label set (values in `labelNames` order): `.observe(value)` on it. */
  cell(...values: string[]): HistogramCell {
    return this.cellOf(values);
  }

  protected newCell(labels: Record<string, string>): HistogramCell {
    return new HistogramCell(labels, this.bounds);
  }

  /** Cumulative buckets, +Inf, sum and count; the cell's labels shared by all (prom-client's shape and label order). */
  protected exported(cell: HistogramCell): MetricValue[] {
    const values: MetricValue[] = [];
    const at = (metricName: string, value: number, labels: MetricValue['labels']) =>
      values.push({ labels, sharedLabels: cell.labels, value, metricName });
    let cumulative = 0;
    this.bounds.forEach((bound, i) => at(`${this.name}_bucket`, (cumulative += cell.counts[i]!), { le: bound }));
    at(`${this.name}_bucket`, cell.count, { le: '+Inf' });
    at(`${this.name}_sum`, cell.sum, {});
    at(`${this.name}_count`, cell.count, {});
    return values;
  }
}

export class ServiceMetrics {
  readonly registry = new Registry();
  readonly claims: CellCounter<'kind' | 'outcome'>;
  readonly claimSeconds: CellHistogram<'kind'>;
  readonly requestSeconds: CellHistogram<'method' | 'route' | 'status'>;
  readonly lockWaiters: Gauge;

  constructor(dibs: Dibs) {
    const registers = [this.registry];
    // `serve --workers N`: each worker answers scrapes with its own series, told apart by this label.
    if (cluster.isWorker) this.registry.setDefaultLabels({ worker: String(cluster.worker!.id) });
    collectDefaultMetrics({ register: this.registry, prefix: 'dibs_' });
    this.claims = new CellCounter({
      name: 'dibs_claims_total',
      help: 'Claims (pool codes, sale purchases and reservations) by outcome',
      labelNames: ['kind', 'outcome'],
      registers,
    });
    this.claimSeconds = new CellHistogram({
      name: 'dibs_claim_duration_seconds',
      help: 'Time to answer a claim, store included',
      labelNames: ['kind'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    });
    this.requestSeconds = new CellHistogram({
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
    const started = performance.now();
    try {
      const result = await fn();
      this.claims.inc(kind, outcomeOf(result));
      return result;
    } catch (error) {
      this.claims.inc(kind, isDibsError(error) ? error.code : 'error');
      throw error;
    } finally {
      this.claimSeconds.cell(kind).observe((performance.now() - started) / 1000);
    }
  }

  register(app: FastifyInstance): void {
    app.addHook('onResponse', (request, reply, done) => {
      this.requestSeconds
        .cell(request.method, request.routeOptions.url ?? 'unknown', String(reply.statusCode))
        .observe(reply.elapsedTime / 1000);
      done();
    });
  }
}
