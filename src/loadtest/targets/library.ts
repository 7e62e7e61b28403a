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
import type { ClaimAnswer, ClaimClient, ControlClient } from './target.js';

type StoreTarget = Extract<LoadTarget, { kind: 'store' }>;
type OpenDibs = (store: string, options?: Record<string, unknown>) => Promise<Dibs>;

/** `openDibs` from dibs itself, or from the module the target names (a wrapper under test). */
async function loadOpenDibs(target: StoreTarget): Promise<OpenDibs> {
  if (target.storeModule === undefined) return (await import('../../index.js')).openDibs;
  const path = isAbsolute(target.storeModule) ? target.storeModule : resolve(target.storeModule);
  const mod = (await import(pathToFileURL(path).href)) as { openDibs?: OpenDibs };
  if (typeof mod.openDibs !== 'function') throw new Error(`store module ${target.storeModule} does not export openDibs(store, options)`);
  return mod.openDibs;
}

async function open(target: StoreTarget): Promise<Dibs> {
  return (await loadOpenDibs(target))(target.store, target.storeOptions ?? {});
}

export async function openLibraryClaimClient(target: StoreTarget): Promise<ClaimClient> {
  const dibs = await open(target);
  return {
    async claim(pool, claimant, idempotencyKey): Promise<ClaimAnswer> {
      try {
        const r = await dibs.pools.claim(pool, claimant, idempotencyKey === undefined ? {} : { idempotencyKey });
        return { status: r.status, code: r.code, held: r.held, replayed: r.replayed };
      } catch (error) {
        // A non-DibsError is a bug in the store: one stable code, the message as detail.
        if (isDibsError(error)) return { status: 'error', error: error.code };
        return { status: 'error', error: 'exception', detail: error instanceof Error ? error.message : String(error) };
      }
    },
    close: () => dibs.close(),
  };
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
    close: () => dibs.close(),
  };
}
