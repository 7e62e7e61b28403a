/**
 * Reads and writes of pool, code and holder documents that claims (claim.ts), per-code steps
 * (pools.ts) and holds and windows (code-lifecycle.ts) share: kept apart so those modules import
 * it rather than each other.
 */
import { FieldValue, type DocumentReference, type Timestamp, type Transaction } from '@google-cloud/firestore';
import { notFound } from '../../core/errors.js';
import type { Layout, PoolRefs } from './layout.js';
import type { MultiDoc } from './multi-use.js';
import { recordEvent, type CodeDoc, type HolderDoc, type PoolDoc } from './records.js';

/** Counter shards a new pool starts with; claims that keep colliding add more (up to MAX_SHARDS). */
export const INITIAL_SHARDS = 4;
export const MAX_SHARDS = 64;

/**
 * Reads the pool and one code, single-use (`rec`) or multi-use (`multi`): the multi-use document
 * is read only when there is no single-use one. not_found for the pool, or for neither code.
 */
export async function readAnyCode(
  tx: Transaction,
  refs: PoolRefs,
  pool: string,
  code: string,
): Promise<{
  poolDoc: PoolDoc;
  now: Timestamp;
  rec: CodeDoc | null;
  multi: MultiDoc | null;
  codeTime: Timestamp | null;
}> {
  const [poolSnap, codeSnap] = await tx.getAll(refs.pool, refs.code(code));
  if (!poolSnap!.exists) throw notFound('pool', pool);
  const base = { poolDoc: poolSnap!.data() as PoolDoc, now: poolSnap!.readTime };
  if (codeSnap!.exists)
    return { ...base, rec: codeSnap!.data() as CodeDoc, multi: null, codeTime: codeSnap!.updateTime! };
  const multi = await tx.get(refs.multi(code));
  if (!multi.exists) throw notFound('code', code);
  return { ...base, rec: null, multi: multi.data() as MultiDoc, codeTime: null };
}

/** Writes a holder document after `change`; a holder without codes is deleted. */
export function writeHolder(
  tx: Transaction,
  ref: DocumentReference,
  holder: HolderDoc | undefined,
  claimant: string,
  change: (held: HolderDoc['held']) => HolderDoc['held'],
  redeemedDelta: number,
): void {
  const held = change(holder?.held ?? []);
  if (held.length === 0) tx.delete(ref);
  else
    tx.set(ref, {
      claimant,
      held,
      n: held.length,
      redeemed: (holder?.redeemed ?? 0) + redeemedDelta,
    } satisfies HolderDoc);
}

/** After free went down to `free`: one pool.low_stock event per crossing of the threshold (caller read the shards). */
export function lowStockAfterDrop(
  tx: Transaction,
  layout: Layout,
  refs: PoolRefs,
  pool: PoolDoc,
  free: number,
  now: Timestamp,
): void {
  if (pool.threshold === null || !pool.armed || free > pool.threshold) return;
  const crossing = pool.lowEvents + 1;
  tx.update(refs.pool, { armed: false, lowEvents: FieldValue.increment(1) });
  recordEvent(tx, layout, pool.name, now, 'pool.low_stock', `pool.low_stock:${pool.name}:${crossing}`, {
    pool: pool.name,
    free,
    threshold: pool.threshold,
    crossing,
  });
}
