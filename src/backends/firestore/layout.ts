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
 *   dibs/{prefix}/events/{id}                       outbox: pool, type, key, payload, at
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
  code(code: string): DocumentReference;
  holder(claimant: string): DocumentReference;
  key(key: string): DocumentReference;
  shard(i: number): DocumentReference;
}

export class Layout {
  readonly root: DocumentReference;
  readonly pools: CollectionReference;
  readonly events: CollectionReference;

  constructor(
    readonly db: Firestore,
    readonly prefix: string,
  ) {
    this.root = db.collection('dibs').doc(prefix);
    this.pools = this.root.collection('pools');
    this.events = this.root.collection('events');
  }

  pool(name: string): PoolRefs {
    const pool = this.pools.doc(name);
    const codes = pool.collection('codes');
    const holders = pool.collection('holders');
    const keys = pool.collection('keys');
    const shards = pool.collection('shards');
    return {
      pool,
      codes,
      holders,
      keys,
      shards,
      code: (code) => codes.doc(encodeId(code)),
      holder: (claimant) => holders.doc(encodeId(claimant)),
      key: (key) => keys.doc(encodeId(key)),
      shard: (i) => shards.doc(String(i)),
    };
  }
}
