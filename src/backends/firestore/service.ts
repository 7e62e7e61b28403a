/**
 * The HTTP service's API keys and idempotency records on Firestore, so `dibs serve` runs on a
 * Firestore store alone:
 *
 *   dibs/{prefix}/apiKeys/{id}                 the ApiKeyRecord (only the key's sha256 is stored)
 *   dibs/{prefix}/idempotency/{b64(scope␟key)} f (fingerprint), r (the stored answer, once done),
 *                                              until (Timestamp: server read time + TTL)
 *
 * Every decision is a compare-and-set, as in locks.ts: read without a lock, then `create` (the
 * record must not exist yet) or a write guarded by the update time that was read — so twenty
 * requests that begin one key at the same time start it exactly once, without locking
 * transactions (which deadlock on the emulator). Expiry is judged by the read's time, the
 * server's clock. Rate-limit windows are not offered (the service then counts per instance).
 *
 * A begin writes a random id of its own (`q`): the client re-sends a write whose answer was lost
 * (UNAVAILABLE), and the re-sent `create` of a record that was created fails as "already exists" —
 * read back, the record carries this begin's id, so the request starts instead of being told it
 * is in flight (by itself).
 */
import { randomBytes } from 'node:crypto';
import {
  FieldValue,
  type DocumentReference,
  type DocumentSnapshot,
  type Firestore,
  type Timestamp,
} from '@google-cloud/firestore';
import type { ApiKeyRecord, IdempotencyBegin, ServiceStore, StoredResponse } from '../../core/service-store.js';
import { encodeId, type Layout } from './layout.js';
import { Timestamp as Ts } from './records.js';
import { CONTENTION_DEADLINE_MS, contended, GRPC } from './transactions.js';

interface IdemDoc {
  f: string;
  /** The id of the begin that wrote the record. */
  q?: string;
  r?: StoredResponse;
  until: Timestamp;
}

/** Most records one purge deletes per batch (Firestore's limit for one commit). */
const PURGE_BATCH = 500;

const after = (t: Timestamp, ms: number) => Ts.fromMillis(t.toMillis() + ms);
const expired = (doc: IdemDoc, now: Timestamp) => doc.until.toMillis() <= now.toMillis();
/** A guarded write lost to another writer: read again and decide again. */
const lostRace = (error: unknown) => {
  const code = (error as { code?: unknown })?.code;
  return code === GRPC.ALREADY_EXISTS || code === GRPC.FAILED_PRECONDITION || code === GRPC.ABORTED;
};

/** A compare-and-set that lost its race: try again, unless the contention bound has passed (transactions.ts). */
function raceLost(error: unknown, attempts: number, since: number): void {
  if (!lostRace(error)) throw error;
  if (Date.now() - since > CONTENTION_DEADLINE_MS) throw contended(attempts, since);
}

export class FirestoreServiceStore implements ServiceStore {
  private readonly db: Firestore;
  private readonly keys;
  private readonly idempotency;

  constructor(layout: Layout) {
    this.db = layout.db;
    this.keys = layout.root.collection('apiKeys');
    this.idempotency = layout.root.collection('idempotency');
  }

  async insertKey(key: ApiKeyRecord): Promise<void> {
    await this.keys.doc(key.id).create(key);
  }

  async getKey(id: string): Promise<ApiKeyRecord | null> {
    const snap = await this.keys.doc(id).get();
    return snap.exists ? (snap.data() as ApiKeyRecord) : null;
  }

  async listKeys(tenant?: string): Promise<ApiKeyRecord[]> {
    // ordered by creation; the tenant is filtered here (a where + orderBy pair would need a composite index)
    const snap = await this.keys.orderBy('createdAt').get();
    return snap.docs.map((d) => d.data() as ApiKeyRecord).filter((k) => tenant === undefined || k.tenant === tenant);
  }

  async revokeKey(id: string): Promise<ApiKeyRecord | null> {
    const ref = this.keys.doc(id);
    const since = Date.now();
    for (let attempt = 1; ; attempt++) {
      const snap = await ref.get();
      if (!snap.exists) return null;
      const record = snap.data() as ApiKeyRecord;
      if (record.revokedAt) return record; // revoking twice keeps the first time
      const revokedAt = snap.readTime.toDate().toISOString();
      try {
        await ref.update({ revokedAt }, { lastUpdateTime: snap.updateTime! });
        return { ...record, revokedAt };
      } catch (error) {
        raceLost(error, attempt, since);
      }
    }
  }

  async beginIdempotent(
    scope: string,
    key: string,
    fingerprint: string,
    inFlightTtlMs: number,
  ): Promise<IdempotencyBegin> {
    const ref = this.idemRef(scope, key);
    const begin = randomBytes(12).toString('base64url');
    const since = Date.now();
    for (let attempt = 1; ; attempt++) {
      const snap = await ref.get();
      const doc = snap.data() as IdemDoc | undefined;
      if (doc && doc.q === begin && !doc.r) return { state: 'started' }; // our own write, its answer lost
      if (doc && !expired(doc, snap.readTime)) {
        return doc.r
          ? { state: 'done', fingerprint: doc.f, response: doc.r }
          : { state: 'in_flight', fingerprint: doc.f };
      }
      const record: IdemDoc = { f: fingerprint, q: begin, until: after(snap.readTime, inFlightTtlMs) };
      try {
        // absent: create (fails if another request created it meanwhile); expired: take it over
        if (snap.exists)
          await ref.update(
            { f: record.f, q: begin, r: FieldValue.delete(), until: record.until },
            { lastUpdateTime: snap.updateTime! },
          );
        else await ref.create(record);
        return { state: 'started' };
      } catch (error) {
        raceLost(error, attempt, since);
      }
    }
  }

  async completeIdempotent(scope: string, key: string, response: StoredResponse, ttlMs: number): Promise<void> {
    const ref = this.idemRef(scope, key);
    const snap = await ref.get();
    const f = (snap.data() as IdemDoc | undefined)?.f ?? '';
    await ref.set({ f, r: response, until: after(snap.readTime, ttlMs) } satisfies IdemDoc);
  }

  async abandonIdempotent(scope: string, key: string): Promise<void> {
    // Only a record still in flight is forgotten, and only if nobody changed it since it was read.
    const ref = this.idemRef(scope, key);
    const snap = await ref.get();
    const doc = snap.data() as IdemDoc | undefined;
    if (!doc || doc.r) return;
    await ref.delete({ lastUpdateTime: snap.updateTime! }).catch((error: unknown) => {
      if (!lostRace(error)) throw error;
    });
  }

  async purgeExpired(): Promise<number> {
    let purged = 0;
    // Bounded: one clock for the whole run. The records due by it only get fewer (a renewal moves
    // a record's `until` past it, a new record's is later), and every round deletes its page or
    // finds it renewed; records expiring while it runs are the next run's (with a clock read each
    // round, a store whose records expire faster than it deletes them kept it running).
    const now = (await this.idempotency.limit(1).get()).readTime;
    for (;;) {
      const stale = await this.idempotency.where('until', '<=', now).limit(PURGE_BATCH).get();
      if (stale.empty) return purged;
      const batch = this.db.batch();
      // guarded: a record renewed since the query is kept
      for (const doc of stale.docs) batch.delete(doc.ref, { lastUpdateTime: doc.updateTime });
      try {
        await batch.commit();
        purged += stale.size;
      } catch (error) {
        if (!lostRace(error)) throw error;
        purged += await this.purgeOneByOne(stale.docs);
      }
      if (stale.size < PURGE_BATCH) return purged;
    }
  }

  /** After a batch lost a race: each stale record alone, skipping those renewed meanwhile. */
  private async purgeOneByOne(docs: DocumentSnapshot[]): Promise<number> {
    let purged = 0;
    for (const doc of docs) {
      await doc.ref.delete({ lastUpdateTime: doc.updateTime! }).then(
        () => purged++,
        (error: unknown) => {
          if (!lostRace(error)) throw error;
        },
      );
    }
    return purged;
  }

  private idemRef(scope: string, key: string): DocumentReference {
    return this.idempotency.doc(encodeId(`${scope}\u001f${key}`));
  }
}
