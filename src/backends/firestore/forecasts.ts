/**
 * Forecasts on Firestore. The counts are aggregation queries over time fields the steps already
 * write — a code's claim time `ca` (cleared when it is released or revoked) and an order's `at` —
 * run in ONE read-only transaction whose first read (the pool or sale document) fixes "now": the
 * window bounds come from the server's clock, never the caller's. Per window: one `count()` (for a
 * sale `sum('q')`) and the first event inside it (`orderBy … limit(1)`), so a reading costs a
 * handful of index reads however busy the subject is, and it takes no lock (claims never wait on it).
 *
 * Watches are documents `dibs/{prefix}/forecasts/{kind}|{b64(subject)}` (`within`, `armed`, `fired`).
 * The alert check reads the forecast outside any lock, lets the shared rules decide
 * (core/forecast.ts emptySoonStep) and applies the decision compare-and-set: the watch is read
 * without a lock and written, with the `<kind>.empty_soon` event, only if it is unchanged since
 * (its update time) and still as the check saw it. Racing checks (any process) thus record one crossing once; a loser re-reads.
 */
import { AggregateField, FieldPath, type Query, Timestamp, type Transaction } from '@google-cloud/firestore';
import { notFound } from '../../core/errors.js';
import {
  emptySoonStep,
  FORECAST_WINDOWS,
  forecastFrom,
  type Forecast,
  type ForecastBackend,
  type WindowCount,
} from '../../core/forecast.js';
import { encodeId, type Layout } from './layout.js';
import { sumShards, writeEvent } from './records.js';
import { isoMs, type SaleDoc } from './sale-records.js';
import type { TxRunner } from './transactions.js';

interface WatchDoc {
  kind: Forecast['kind'];
  subject: string;
  within: number;
  armed: boolean;
  fired: number;
}

/** How often one check re-reads a watch whose state moved under it (another checker won). */
const MAX_STEP_ROUNDS = 5;
/** Watches one check reads per page. */
const WATCH_PAGE = 200;

export class FirestoreForecasts implements ForecastBackend {
  constructor(
    private readonly layout: Layout,
    private readonly runner: TxRunner,
  ) {}

  private get watches() {
    return this.layout.root.collection('forecasts');
  }

  private watchRef(kind: Forecast['kind'], subject: string) {
    return this.watches.doc(`${kind}|${encodeId(subject)}`);
  }

  read(kind: Forecast['kind'], subject: string): Promise<Forecast> {
    return this.runner.read((tx) =>
      kind === 'pool' ? this.poolForecast(tx, subject) : this.saleForecast(tx, subject),
    );
  }

  async watch(kind: Forecast['kind'], subject: string, withinMs: number | null): Promise<void> {
    await this.read(kind, subject); // not_found for an unknown pool/sale
    const ref = this.watchRef(kind, subject);
    if (withinMs === null) {
      await ref.delete();
      return;
    }
    // a new watch starts armed; changing the threshold keeps the alert state and the crossing count
    await this.runner.run(async (tx) => {
      const snap = await tx.get(ref);
      const old = snap.data() as WatchDoc | undefined;
      tx.set(ref, {
        kind,
        subject,
        within: withinMs,
        armed: old?.armed ?? true,
        fired: old?.fired ?? 0,
      } satisfies WatchDoc);
    });
  }

  async checkWatches(): Promise<Forecast[]> {
    const fired: Forecast[] = [];
    let after: string | null = null;
    // bounded: one forward pass (each page starts after the last watch of the one before) over
    // watches keyed by (kind, subject), at most one per pool and sale; each step is bounded by
    // MAX_STEP_ROUNDS and its transactions by TxRunner
    for (;;) {
      let query = this.watches.orderBy(FieldPath.documentId()).limit(WATCH_PAGE);
      if (after !== null) query = query.startAfter(after);
      const page = await query.get();
      for (const doc of page.docs) {
        const forecast = await this.step(doc.id, doc.data() as WatchDoc);
        if (forecast) fired.push(forecast);
      }
      if (page.docs.length < WATCH_PAGE) return fired;
      after = page.docs[page.docs.length - 1]!.id;
    }
  }

  /** Advances one watch; returns the forecast when its alert fired now. */
  private async step(id: string, first: WatchDoc): Promise<Forecast | null> {
    let w = first;
    const ref = this.watches.doc(id);
    for (let round = 0; round < MAX_STEP_ROUNDS; round++) {
      let forecast: Forecast;
      try {
        forecast = await this.read(w.kind, w.subject);
      } catch {
        return null; // the pool/sale is gone; its watch is harmless
      }
      const step = emptySoonStep(w.armed, forecast.timeToEmptyMs, w.within);
      if (!step.fire && step.armed === w.armed) return null;
      const seen = w;
      // compare-and-set, not a locking read: checks racing in several processes all read the
      // watch and write it, and locking transactions on one document deadlock on the emulator
      // until its lock timeout (as the lock documents did); the write commits only if the watch is
      // unchanged since this read (its update time), else the body runs again and sees the move
      const outcome = await this.runner.run(
        async (tx) => {
          const snap = await ref.get();
          const now = snap.data() as WatchDoc | undefined;
          if (!now) return { applied: false, now };
          if (now.armed !== seen.armed || now.fired !== seen.fired || now.within !== seen.within)
            return { applied: false, now };
          const count = seen.fired + (step.fire ? 1 : 0);
          tx.update(ref, { armed: step.armed, fired: count }, { lastUpdateTime: snap.updateTime! });
          if (step.fire) {
            const source: Record<string, string> =
              seen.kind === 'pool' ? { pool: seen.subject } : { sale: seen.subject, src: 'sale' };
            writeEvent(
              tx,
              this.layout,
              source,
              snap.readTime,
              `${seen.kind}.empty_soon`,
              `${seen.kind}.empty_soon:${seen.subject}:${count}`,
              { [seen.kind]: seen.subject, ...forecast, withinMs: seen.within },
            );
          }
          return { applied: true, now };
        },
        undefined,
        { optimistic: true },
      );
      if (outcome.applied) return step.fire ? forecast : null;
      if (!outcome.now) return null; // unwatched meanwhile
      w = outcome.now;
    }
    return null;
  }

  private async poolForecast(tx: Transaction, pool: string): Promise<Forecast> {
    const refs = this.layout.pool(pool);
    const snap = await tx.get(refs.pool);
    if (!snap.exists) throw notFound('pool', pool);
    const now = snap.readTime.toMillis();
    const [shards, windows] = await Promise.all([
      tx.get(refs.shards),
      windowCounts(tx, now, (since) => refs.codes.where('ca', '>=', Timestamp.fromMillis(since)), 'ca', null),
    ]);
    return forecastFrom({
      kind: 'pool',
      subject: pool,
      windows,
      remaining: sumShards(shards.docs).free,
      at: isoMs(now),
    });
  }

  private async saleForecast(tx: Transaction, id: string): Promise<Forecast> {
    const refs = this.layout.sale(id);
    const snap = await tx.get(refs.sale);
    if (!snap.exists) throw notFound('sale', id);
    const doc = snap.data() as SaleDoc;
    const now = snap.readTime.toMillis();
    const [windows, stale] = await Promise.all([
      windowCounts(tx, now, (since) => refs.orders.where('at', '>=', isoMs(since)), 'at', 'q'),
      // held units whose hold has expired but not been marked yet stop counting at once
      doc.ne === undefined || doc.ne > now
        ? Promise.resolve(0)
        : tx
            .get(this.layout.holds.where('sale', '==', id).where('ae', '<=', now))
            .then((s) => s.docs.reduce((sum, d) => sum + (d.get('q') as number), 0)),
    ]);
    const remaining = doc.cap === null ? null : Math.max(0, doc.cap - doc.sold - (doc.held - stale));
    return forecastFrom({ kind: 'sale', subject: id, windows, remaining, at: isoMs(now) });
  }
}

/**
 * Units taken in each forecast window and the time of the first one inside it: a count (or the sum
 * of `units`) and a one-document query per window, all in the caller's read-only transaction.
 */
async function windowCounts(
  tx: Transaction,
  now: number,
  since: (ms: number) => Query,
  field: 'ca' | 'at',
  units: string | null,
): Promise<WindowCount[]> {
  return Promise.all(
    FORECAST_WINDOWS.map(async (w) => {
      const query = since(now - w.ms);
      const [agg, first] = await Promise.all([
        tx.get(query.aggregate({ n: units === null ? AggregateField.count() : AggregateField.sum(units) })),
        tx.get(query.orderBy(field).limit(1)),
      ]);
      const taken = Number(agg.data().n ?? 0);
      const at = first.docs[0]?.get(field) as Timestamp | string | undefined;
      const firstMs = at === undefined ? null : typeof at === 'string' ? Date.parse(at) : at.toMillis();
      return { taken, spanMs: firstMs === null ? 0 : now - firstMs };
    }),
  );
}
