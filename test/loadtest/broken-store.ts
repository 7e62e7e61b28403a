/**
 * TEST ONLY: a deliberately broken store for proving that the checkers can fail. It wraps the real
 * backend; `DIBS_BROKEN` (inherited by every worker process) picks the bug:
 * - `double-issue` (default): every 5th claim a process makes is answered with a code that process
 *   already gave to somebody else, without touching the store — a double issue (I1);
 * - `lose-ack`: every 5th acknowledged claim is released behind the claimant's back right after the
 *   answer went out — a lost acknowledgement (I5);
 * - `phantom-order`: every 3rd buy the store refuses as sold out is acknowledged anyway with an
 *   order that exists nowhere — more units promised than the cap allows (I5, and I3 by the answers);
 * - `oversell`: every 3rd buy the store refuses as sold out is really sold, the sale's cap quietly
 *   raised for it first — the store holds orders for more units than the sale was created with (I3).
 * Loaded by `runLoadtest` / `dibs loadtest` through `storeModule` / `--store-module`, in the
 * coordinator and in every worker process.
 */
import {
  Dibs,
  openDibs as openRealDibs,
  type Backend,
  type BackendOptions,
  type BuyResult,
  type ClaimManyResult,
  type PoolBackend,
} from '../../src/index.js';
import type { SaleBackend } from '../../src/core/sales/backend.js';

type Bug = 'double-issue' | 'lose-ack' | 'phantom-order' | 'oversell';

export async function openDibs(store: string, options: BackendOptions = {}): Promise<Dibs> {
  const real = (await openRealDibs(store, options)).backend;
  const bug = (process.env.DIBS_BROKEN ?? 'double-issue') as Bug;
  let calls = 0;
  let lastWinner: { claimant: string; code: string } | null = null;

  async function claim(pool: string, claimant: string, count: number, key: string | null): Promise<ClaimManyResult> {
    calls++;
    if (bug === 'double-issue' && calls % 5 === 0 && lastWinner !== null && lastWinner.claimant !== claimant) {
      return { pool, claimant, status: 'claimed', codes: [lastWinner.code], held: [lastWinner.code], replayed: false };
    }
    const result = await real.pools.claim(pool, claimant, count, key);
    if (result.status === 'claimed' && result.codes[0] !== undefined) {
      lastWinner = { claimant, code: result.codes[0] };
      if (bug === 'lose-ack' && calls % 5 === 0 && !result.replayed)
        setTimeout(() => void real.pools.release(pool, result.codes[0]!, claimant).catch(() => {}), 0);
    }
    return result;
  }

  let refusals = 0;
  async function buy(saleId: string, customer: string, quantity: number, key: string | null): Promise<BuyResult> {
    try {
      return await real.sales.buy(saleId, customer, quantity, key);
    } catch (error) {
      if (bug === 'oversell' && (error as { code?: string }).code === 'sold_out' && ++refusals % 3 === 0) {
        const sale = await real.sales.getSale(saleId);
        if (sale.cap !== null) await real.sales.updateSale(saleId, { cap: sale.cap + quantity });
        return real.sales.buy(saleId, customer, quantity, key);
      }
      if (bug !== 'phantom-order' || (error as { code?: string }).code !== 'sold_out' || ++refusals % 3 !== 0)
        throw error;
      const order = {
        id: `ord_phantom_${refusals}_${process.pid}`,
        saleId,
        customer,
        quantity,
        holdId: null,
        createdAt: new Date().toISOString(),
      };
      return { order, replayed: false };
    }
  }

  const override = <T extends object>(target: T, methods: Record<string, unknown>): T =>
    new Proxy(target, {
      get(t, property) {
        if (typeof property === 'string' && property in methods) return methods[property];
        const value = Reflect.get(t, property, t) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(t) : value;
      },
    });
  const pools = override(real.pools, { claim }) as PoolBackend;
  const sales = override(real.sales, { buy }) as SaleBackend;
  const backend: Backend = {
    kind: real.kind,
    pools,
    sales,
    outbox: real.outbox,
    locks: real.locks,
    counters: real.counters,
    limits: real.limits,
    service: real.service,
    health: () => real.health(),
    close: () => real.close(),
  };
  return new Dibs(backend);
}
