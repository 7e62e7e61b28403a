/**
 * Collection layout (see docs/firestore.md). Everything of one store lives under one root
 * document `dibs/{prefix}`, so several dibs stores can share a project and a test can drop its
 * whole tree with one recursive delete:
 *
 *   dibs/{prefix}                                   root (no fields needed)
 *   dibs/{prefix}/pools/{pool}                      definition, shard count, low-stock state
 *   dibs/{prefix}/pools/{pool}/codes/{b64(code)}    one per code: s, h, k, ca, ra, o, fr
 *   dibs/{prefix}/pools/{pool}/holders/{b64(c)}     one per claimant: held [{c, k}], n, redeemed
 *   dibs/{prefix}/pools/{pool}/keys/{b64(key)}      one per idempotency key: c (claimant), n (count)
 *   dibs/{prefix}/pools/{pool}/shards/{i}           counter shards: total, free, claimed, redeemed, revoked
 *   dibs/{prefix}/pools/{pool}/multi/{b64(code)}    one per multi-use code: code, max, used, per, vs, ve
 *     …/multi/{b64(code)}/uses/{b64(order)}         one per use: o (order), c (claimant), at
 *     …/multi/{b64(code)}/by/{b64(claimant)}        uses per claimant: claimant, n
 *   dibs/{prefix}/deletions/{b64(pool)}             a pool being deleted (tombstone): pool, owner, exp (lease
 *                                                   expiry, server ms), at, n (takeovers) — see pool-deletion.ts
 *   dibs/{prefix}/events/{id}                       outbox: pool | sale (+ src 'sale'), type, key, payload, at,
 *                                                   delivery: p (created ms) and d (due ms) while pending,
 *                                                   a (attempts), x ('d' delivered / 'x' dead), log
 *   dibs/{prefix}/sales/{id}                        one per sale: definition, sold, held, job fields
 *                                                   ad (start ms, until announced), ed (end ms, until
 *                                                   recorded), ne (no active hold expires before it)
 *   dibs/{prefix}/sales/{id}/customers/{b64(c)}     one per customer: o (units ordered), h/hq/he (active hold)
 *   dibs/{prefix}/sales/{id}/keys/{b64(key)}        one per idempotency key: k (buy|reserve), c, q, r (result id)
 *   dibs/{prefix}/sales/{id}/orders/{order id}      one per order: c, q, h (hold id), at
 *   dibs/{prefix}/holds/{hold id}                   one per hold: sale, c, q, s, e, ca, o; ae (expiry) while active
 *   dibs/{prefix}/skus/{b64(sku)}                   the SKU's non-cancelled sales {id: {s, e}} (overlap preflight)
 *   dibs/{prefix}/skus/{b64(sku)}/wishes/{b64(c)}   one per wishlister: customer, ch (channels), at
 *
 * Codes, claimants and keys are opaque strings (quotes, slashes, unicode): their document ids
 * are base64url, so any string maps to a valid id and a point read finds it.
 */
import type { CollectionReference, DocumentReference, Firestore } from '@google-cloud/firestore';

export const encodeId = (value: string) => Buffer.from(value, 'utf8').toString('base64url');

export interface PoolRefs {
  pool: DocumentReference;
  codes: CollectionReference;
  holders: CollectionReference;
  keys: CollectionReference;
  shards: CollectionReference;
  multis: CollectionReference;
  code(code: string): DocumentReference;
  /** A multi-use code; its uses (one per order) and per-claimant counts are its subcollections. */
  multi(code: string): DocumentReference;
  use(code: string, order: string): DocumentReference;
  usesBy(code: string, claimant: string): DocumentReference;
  holder(claimant: string): DocumentReference;
  key(key: string): DocumentReference;
  shard(i: number): DocumentReference;
}

export interface SaleRefs {
  sale: DocumentReference;
  customers: CollectionReference;
  keys: CollectionReference;
  orders: CollectionReference;
  customer(customer: string): DocumentReference;
  key(key: string): DocumentReference;
  order(id: string): DocumentReference;
}

export class Layout {
  readonly root: DocumentReference;
  readonly pools: CollectionReference;
  readonly events: CollectionReference;
  readonly sales: CollectionReference;
  readonly holds: CollectionReference;
  readonly skus: CollectionReference;
  readonly deletions: CollectionReference;

  constructor(
    readonly db: Firestore,
    readonly prefix: string,
  ) {
    this.root = db.collection('dibs').doc(prefix);
    this.pools = this.root.collection('pools');
    this.events = this.root.collection('events');
    this.sales = this.root.collection('sales');
    this.holds = this.root.collection('holds');
    this.skus = this.root.collection('skus');
    this.deletions = this.root.collection('deletions');
  }

  /** A sale's documents. Sale ids are letters, digits, '.', '_', '-' and '~': valid document ids as they are. */
  sale(id: string): SaleRefs {
    const sale = this.sales.doc(id);
    const customers = sale.collection('customers');
    const keys = sale.collection('keys');
    const orders = sale.collection('orders');
    return {
      sale,
      customers,
      keys,
      orders,
      customer: (customer) => customers.doc(encodeId(customer)),
      key: (key) => keys.doc(encodeId(key)),
      order: (id) => orders.doc(id),
    };
  }

  hold(id: string): DocumentReference {
    return this.holds.doc(id);
  }

  sku(sku: string): DocumentReference {
    return this.skus.doc(encodeId(sku));
  }

  wish(sku: string, customer: string): DocumentReference {
    return this.sku(sku).collection('wishes').doc(encodeId(customer));
  }

  /** The tombstone of a pool being deleted (pool-deletion.ts): present from the moment its pool document goes until its last document is gone. */
  deletion(pool: string): DocumentReference {
    return this.deletions.doc(encodeId(pool));
  }

  pool(name: string): PoolRefs {
    const pool = this.pools.doc(name);
    const codes = pool.collection('codes');
    const holders = pool.collection('holders');
    const keys = pool.collection('keys');
    const shards = pool.collection('shards');
    const multis = pool.collection('multi');
    return {
      pool,
      codes,
      holders,
      keys,
      shards,
      multis,
      multi: (code) => multis.doc(encodeId(code)),
      use: (code, order) => multis.doc(encodeId(code)).collection('uses').doc(encodeId(order)),
      usesBy: (code, claimant) => multis.doc(encodeId(code)).collection('by').doc(encodeId(claimant)),
      code: (code) => codes.doc(encodeId(code)),
      holder: (claimant) => holders.doc(encodeId(claimant)),
      key: (key) => keys.doc(encodeId(key)),
      shard: (i) => shards.doc(String(i)),
    };
  }
}
