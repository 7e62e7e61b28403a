/**
 * The library target: every worker process opens the store itself with `openDibs`, exactly as
 * an application instance would, so the load exercises the real multi-process path.
 */
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Dibs } from '../../core/dibs.js';
import { isDibsError } from '../../core/errors.js';
import { redact } from '../../backends/registry.js';
import type { LoadTarget } from '../types.js';
import type { ClaimAnswer, ControlClient, WorkClient, WorkMode } from './target.js';

type StoreTarget = Extract<LoadTarget, { kind: 'store' }>;
type OpenDibs = (store: string, options?: Record<string, unknown>) => Promise<Dibs>;

/** `openDibs` from dibs itself, or from the module the target names (a wrapper under test). */
async function loadOpenDibs(target: StoreTarget): Promise<OpenDibs> {
  if (target.storeModule === undefined) return (await import('../../index.js')).openDibs;
  const path = isAbsolute(target.storeModule) ? target.storeModule : resolve(target.storeModule);
  const mod = (await import(pathToFileURL(path).href)) as { openDibs?: OpenDibs };
  if (typeof mod.openDibs !== 'function')
    throw new Error(`store module ${target.storeModule} does not export openDibs(store, options)`);
  return mod.openDibs;
}

async function open(target: StoreTarget): Promise<Dibs> {
  return (await loadOpenDibs(target))(target.store, target.storeOptions ?? {});
}

/** A thrown error as an answer: a DibsError by its stable code, anything else is a bug in the store. */
function errorAnswer(error: unknown): ClaimAnswer {
  if (isDibsError(error)) return { status: 'error', error: error.code };
  return { status: 'error', error: 'exception', detail: error instanceof Error ? error.message : String(error) };
}

/** Epoch ms with sub-ms precision, comparable between processes of one machine. */
const now = () => performance.timeOrigin + performance.now();

export async function openLibraryWorkClient(target: StoreTarget, mode: WorkMode, name: string): Promise<WorkClient> {
  const dibs = await open(target);
  const close = () => dibs.close();
  switch (mode.kind) {
    case 'pool':
      return {
        async run(op) {
          try {
            const r = await dibs.pools.claim(name, op.claimant, op.key === undefined ? {} : { idempotencyKey: op.key });
            return { status: r.status, code: r.code, held: r.held, replayed: r.replayed };
          } catch (error) {
            return errorAnswer(error);
          }
        },
        close,
      };
    case 'sale':
      return {
        async run(op) {
          try {
            const r = await dibs.sales.buy(
              name,
              op.claimant,
              mode.qty,
              op.key === undefined ? {} : { idempotencyKey: op.key },
            );
            return { status: 'claimed', code: r.order.id, units: r.order.quantity, replayed: r.replayed };
          } catch (error) {
            // At the limit is the sale's "already holds": the customer bought what it may.
            if (isDibsError(error) && error.code === 'limit_reached')
              return { status: 'already-held', error: 'limit_reached' };
            return errorAnswer(error);
          }
        },
        close,
      };
    case 'locks':
      return {
        async run(op) {
          const key = op.resource ?? name;
          try {
            const lease = await dibs.locks.acquire(key, { ttlMs: 30_000 + mode.holdMs, waitMs: 120_000 });
            const start = now();
            if (mode.holdMs > 0) await new Promise((resolve) => setTimeout(resolve, mode.holdMs));
            const end = now();
            await dibs.locks.release(lease);
            return { status: 'claimed', code: `${key}#${lease.fence}`, resource: key, fence: lease.fence, start, end };
          } catch (error) {
            return { ...errorAnswer(error), resource: key };
          }
        },
        close,
      };
  }
}

export async function openLibraryControlClient(target: StoreTarget): Promise<ControlClient> {
  const dibs = await open(target);
  return {
    backend: dibs.kind,
    address: redact(target.store),
    async createPool(name, perClaimantLimit) {
      await dibs.pools.create({ name, perClaimantLimit });
    },
    importCodes: (pool, codes) => dibs.pools.importCodes(pool, codes),
    async poolInfo(pool) {
      const p = await dibs.pools.get(pool);
      return { perClaimantLimit: p.perClaimantLimit, stats: p.stats };
    },
    async exportCodes(pool) {
      const codes = [];
      for await (const batch of dibs.pools.exportCodes(pool, { batchSize: 5000 })) {
        for (const c of batch) codes.push({ code: c.code, status: c.status, claimant: c.claimant });
      }
      return codes;
    },
    audit: (pool) => dibs.pools.audit(pool),
    async createSale(id, cap, perCustomerLimit) {
      const startsAt = new Date(Date.now() - 1000).toISOString();
      await dibs.sales.create({
        id,
        sku: id,
        startsAt,
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        cap,
        perCustomerLimit,
      });
    },
    async saleInfo(id) {
      const { cap, stats } = await dibs.sales.get(id);
      return { cap: cap ?? 0, sold: stats.sold, held: stats.held, available: stats.available ?? 0 };
    },
    auditSale: (id) => dibs.sales.audit(id),
    lockHolders: async (key) => (await dibs.locks.inspect(key)).holders.length,
    close: () => dibs.close(),
  };
}
