/**
 * A sale's active holds on Firestore, read in one read-only transaction whose first read (the sale
 * document) fixes "now" — the server's clock — so a hold that has lapsed is never listed, even
 * before a step or the sweep marks it expired.
 *
 * - All: `holds` where `sale ==` and `ae >` now, ordered by `ae` (the composite index sale + ae the
 *   stale-hold queries already use; `ae` exists only on active holds), limited.
 * - One customer's: a customer has at most one active hold per sale, named by its customer
 *   document (`h`): two point reads, no query.
 */
import type { Transaction } from '@google-cloud/firestore';
import { notFound } from '../../core/errors.js';
import type { Hold } from '../../core/sales/types.js';
import type { Layout } from './layout.js';
import { toHold, type CustomerDoc, type HoldDoc } from './sale-records.js';

export async function listActiveHolds(
  tx: Transaction,
  layout: Layout,
  saleId: string,
  { limit, customer }: { limit: number; customer?: string },
): Promise<Hold[]> {
  const refs = layout.sale(saleId);
  const saleSnap = await tx.get(refs.sale);
  if (!saleSnap.exists) throw notFound('sale', saleId);
  const now = saleSnap.readTime.toMillis();
  if (customer !== undefined) {
    const own = (await tx.get(refs.customer(customer))).data() as CustomerDoc | undefined;
    if (!own?.h) return [];
    const hold = (await tx.get(layout.hold(own.h))).data() as HoldDoc | undefined;
    return hold && hold.s === 'active' && hold.e > now ? [toHold(hold)] : [];
  }
  const page = await tx.get(layout.holds.where('sale', '==', saleId).where('ae', '>', now).orderBy('ae').limit(limit));
  return page.docs.map((d) => toHold(d.data() as HoldDoc));
}
