/**
 * Leases and semaphores on Firestore: one document per lock key, `dibs/{prefix}/locks/{b64(key)}`
 * = { key, fence (last fence given, only grows: max(last + 1, read time in µs)), holders: { token: { f: fence, exp: Timestamp } } }.
 * Each operation reads the document without a lock, judges expiry by that read's time (the
 * server's clock) — a lapsed holder is dropped there, never trusted — and commits its write only if
 * the document is still the one it read (its update time; `create` when there was none), else reads
 * again: a compare-and-set. Locking read-modify-write transactions from several clients on one
 * document deadlock on the emulator until its lock timeout (the sales steps measured 155 s vs 3.6 s
 * for 4 clients × 40 increments), which starved fair waiters under load. Waiters are woken by a
 * snapshot listener on the lock document (one per key per process): any change of the document
 * (a release, an expiry swept by another acquire) wakes them; the facade's polling is only the
 * safety net.
 *
 * A commit whose answer was lost (see transactions.ts) is settled by reading the lock document
 * back: a grant is ours iff it lists our token (`tryAcquire` then returns that lease, never null),
 * a renewal iff it carries the expiry we wrote, a release iff the token is gone.
 */
import { randomBytes } from 'node:crypto';
import type { DocumentReference, DocumentSnapshot, Timestamp, Transaction } from '@google-cloud/firestore';
import type { LockBackend } from '../../core/locks/backend.js';
import type { Page } from '../../core/types.js';
import { leaseLost, notOwner } from '../../core/locks/errors.js';
import type { LeaseGrant, LockInfo } from '../../core/locks/types.js';
import { encodeId, type Layout } from './layout.js';
import { Timestamp as Ts } from './records.js';
import { witnessResolver, type Resolver, type TxRunner } from './transactions.js';

interface Holder {
  f: number;
  exp: Timestamp;
}

interface LockDoc {
  key: string;
  fence: number;
  holders: Record<string, Holder>;
}

const after = (t: Timestamp, ms: number) => Ts.fromMillis(t.toMillis() + ms);

/**
 * The next fence = max(last + 1, the read time in microseconds since 1970): a lock document that
 * lost its history (deleted, restored from an export) starts again above every fence handed out
 * before, and a clock that steps back never makes fences go back or repeat. ~1.8e15 < 2^53.
 */
const nextFence = (doc: LockDoc | undefined, now: Timestamp) =>
  Math.max((doc?.fence ?? 0) + 1, now.seconds * 1_000_000 + Math.floor(now.nanoseconds / 1000));

/** A grant decided inside a transaction; its validity is measured once the commit has returned. */
interface Granted {
  token: string;
  fence: number;
  exp: Timestamp;
  now: Timestamp;
  readAt: number;
}

/** Holders still live at `now`. */
function live(doc: LockDoc | undefined, now: Timestamp): Record<string, Holder> {
  return Object.fromEntries(Object.entries(doc?.holders ?? {}).filter(([, h]) => h.exp.toMillis() > now.toMillis()));
}

export class FirestoreLocks implements LockBackend {
  private readonly listeners = new Map<string, { stop: () => void; callbacks: Set<() => void> }>();

  constructor(
    private readonly layout: Layout,
    private readonly runner: TxRunner,
  ) {}

  private ref(key: string): DocumentReference {
    return this.layout.root.collection('locks').doc(encodeId(key));
  }

  /**
   * Lock keys ever granted (a lock document outlives its leases: it keeps the fence), in key order:
   * a query ordered by `key` (its automatic single-field index) from the cursor. The facade's
   * companion documents (waiter registrations, fair lines: `KEY\u001fPART`) sort among them and are
   * skipped, so a page may take a few reads more than `limit`.
   */
  async listKeys({ limit, after: cursor }: { limit: number; after?: string }): Promise<Page<string>> {
    const keys: string[] = [];
    let from = cursor;
    // bounded: one forward pass over the lock documents in key order (each page starts after the
    // last key of the one before), ending at a short page or once a page's worth of keys is found
    for (;;) {
      let query = this.layout.root
        .collection('locks')
        .orderBy('key')
        .select('key')
        .limit(limit + 1);
      if (from !== undefined) query = query.startAfter(from);
      const page = await query.get();
      for (const doc of page.docs) {
        const key = doc.get('key') as string;
        if (!key.includes('\u001f')) keys.push(key);
      }
      if (keys.length > limit || page.docs.length <= limit) break;
      from = page.docs[page.docs.length - 1]!.get('key') as string;
    }
    const items = keys.slice(0, limit);
    return { items, nextCursor: keys.length > limit ? items.at(-1)! : null };
  }

  async tryAcquire(key: string, limit: number, ttlMs: number): Promise<LeaseGrant | null> {
    const token = randomBytes(16).toString('base64url');
    const ref = this.ref(key);
    return grant(
      await this.runner.run<Granted | null>(
        async (tx, _n, attempt) => {
          const snap = await ref.get();
          attempt.resolveWith(grantResolver(snap, token));
          const readAt = performance.now();
          const now = snap.readTime;
          const doc = snap.data() as LockDoc | undefined;
          const holders = live(doc, now);
          if (Object.keys(holders).length >= limit) {
            // sweep lapsed holders so listeners of the key hear that a slot may be free
            if (Object.keys(holders).length !== Object.keys(doc?.holders ?? {}).length)
              guardedWrite(tx, snap, { key, fence: doc?.fence ?? 0, holders });
            return null;
          }
          const fence = nextFence(doc, now);
          const exp = after(now, ttlMs);
          guardedWrite(tx, snap, { key, fence, holders: { ...holders, [token]: { f: fence, exp } } });
          return { token, fence, exp, now, readAt };
        },
        undefined,
        OPTIMISTIC,
      ),
    );
  }

  async tryAcquireFair(
    key: string,
    limit: number,
    ttlMs: number,
    queueKey: string,
    ticket: string | null,
  ): Promise<LeaseGrant | null> {
    const token = randomBytes(16).toString('base64url');
    const ref = this.ref(key);
    const lineRef = this.ref(queueKey);
    // One transaction reads the lock and its line together: the tickets ahead and the free slot are
    // judged at the same read time, and the ticket leaves the line in the same commit as the grant.
    return grant(
      await this.runner.run<Granted | null>(
        async (tx, _n, attempt) => {
          // two plain reads; both writes are guarded, so the commit happens only if neither document
          // moved since it was read — the judgement then holds at the commit
          const [snap, lineSnap] = await Promise.all([ref.get(), lineRef.get()]);
          attempt.resolveWith(grantResolver(snap!, token));
          const readAt = performance.now();
          const now = snap!.readTime;
          const doc = snap!.data() as LockDoc | undefined;
          const line = lineSnap!.data() as LockDoc | undefined;
          const tickets = live(line, now);
          let mine = Number.MAX_SAFE_INTEGER;
          if (ticket !== null) {
            const own = tickets[ticket];
            if (!own) return null; // the ticket lapsed: its owner takes a new one
            mine = own.f;
          }
          const holders = live(doc, now);
          const ahead = Object.values(tickets).filter((t) => t.f < mine).length;
          if (Object.keys(holders).length + ahead >= limit) return null;
          const fence = nextFence(doc, now);
          const exp = after(now, ttlMs);
          guardedWrite(tx, snap!, { key, fence, holders: { ...holders, [token]: { f: fence, exp } } });
          if (ticket !== null) {
            delete tickets[ticket];
            guardedWrite(tx, lineSnap!, { key: queueKey, fence: line!.fence, holders: tickets });
          } else if (lineSnap!.exists) {
            // nobody ahead was judged from this line: it must still be so at the commit
            tx.update(lineRef, { key: queueKey }, { lastUpdateTime: lineSnap!.updateTime! });
          }
          return { token, fence, exp, now, readAt };
        },
        undefined,
        OPTIMISTIC,
      ),
    );
  }

  async renew(key: string, token: string, ttlMs: number): Promise<LeaseGrant> {
    const ref = this.ref(key);
    return grant(
      await this.runner.run<Granted>(
        async (tx, _n, attempt) => {
          const snap = await ref.get();
          const readAt = performance.now();
          const now = snap.readTime;
          const doc = snap.data() as LockDoc | undefined;
          const mine = live(doc, now)[token];
          if (!mine) throw leaseLost(key); // expired or never ours: never revived
          const exp = after(now, ttlMs);
          tx.update(ref, { [`holders.${token}`]: { f: mine.f, exp } }, { lastUpdateTime: snap.updateTime! });
          attempt.resolveWith(
            witnessResolver({
              ref,
              guard: snap.updateTime!,
              mine: (back) =>
                holderOf(back, token)?.exp.isEqual(exp)
                  ? {
                      committed: true,
                      value: { token, fence: mine.f, exp, now: back.readTime, readAt: performance.now() },
                    }
                  : null,
            }),
          );
          return { token, fence: mine.f, exp, now, readAt };
        },
        undefined,
        OPTIMISTIC,
      ),
    );
  }

  async release(key: string, token: string): Promise<void> {
    const ref = this.ref(key);
    await this.runner.run(
      async (tx, _n, attempt) => {
        const snap = await ref.get();
        const doc = snap.data() as LockDoc | undefined;
        if (!live(doc, snap.readTime)[token]) throw notOwner(key);
        const holders = live(doc, snap.readTime);
        delete holders[token];
        guardedWrite(tx, snap, { key, fence: doc!.fence, holders });
        attempt.resolveWith(
          witnessResolver({
            ref,
            guard: snap.updateTime!,
            mine: (back) => (back.exists && !holderOf(back, token) ? { committed: true } : null),
          }),
        );
      },
      undefined,
      OPTIMISTIC,
    );
  }

  async inspect(key: string): Promise<Omit<LockInfo, 'waiters'>> {
    const snap = await this.ref(key).get();
    const doc = snap.data() as LockDoc | undefined;
    const holders = Object.entries(live(doc, snap.readTime))
      .map(([token, h]) => ({ tokenPrefix: token.slice(0, 8), fence: h.f, expiresAt: h.exp.toDate().toISOString() }))
      .sort((a, b) => a.fence - b.fence);
    return { key, holders, lastFence: doc?.fence ?? 0 };
  }

  onRelease(key: string, listener: () => void): () => void {
    let entry = this.listeners.get(key);
    if (!entry) {
      const callbacks = new Set<() => void>();
      let first = true;
      const stop = this.ref(key).onSnapshot(
        () => {
          if (first) {
            first = false; // the current state, not a change
            return;
          }
          for (const cb of [...callbacks]) cb();
        },
        () => {
          // the listener broke (connection lost): the waiters' polling carries on
        },
      );
      entry = { stop, callbacks };
      this.listeners.set(key, entry);
    }
    entry.callbacks.add(listener);
    return () => {
      const current = this.listeners.get(key);
      if (!current) return;
      current.callbacks.delete(listener);
      if (current.callbacks.size === 0) {
        current.stop();
        this.listeners.delete(key);
      }
    };
  }

  close(): void {
    for (const { stop } of this.listeners.values()) stop();
    this.listeners.clear();
  }
}

const OPTIMISTIC = { optimistic: true } as const;

function holderOf(snap: DocumentSnapshot, token: string): Holder | undefined {
  return (snap.data() as LockDoc | undefined)?.holders?.[token];
}

/**
 * Settles a grant whose commit's outcome is unknown: the lock document lists the token — the lease
 * is ours (answered, or null if it has lapsed meanwhile). A lock document that did not exist is not
 * fenced by creating one (a made-up document would carry a made-up fence): still absent, the
 * outcome stays unknown and the caller gets `unavailable`.
 */
function grantResolver(snap: DocumentSnapshot, token: string): Resolver<Granted | null> {
  return witnessResolver({
    ref: snap.ref,
    guard: snap.exists ? snap.updateTime! : null,
    mine: (back) => {
      const h = holderOf(back, token);
      if (!h) return null;
      const live = h.exp.toMillis() > back.readTime.toMillis();
      return {
        committed: true,
        value: live ? { token, fence: h.f, exp: h.exp, now: back.readTime, readAt: performance.now() } : null,
      };
    },
  });
}

/** Replaces the lock document read as `snap`, only if it is unchanged since (or still absent). */
function guardedWrite(tx: Transaction, snap: DocumentSnapshot, doc: LockDoc): void {
  if (snap.exists)
    tx.update(snap.ref, { key: doc.key, fence: doc.fence, holders: doc.holders }, { lastUpdateTime: snap.updateTime! });
  else tx.create(snap.ref, doc);
}

/**
 * Validity measured after the grant has COMMITTED: the expiry minus the server's read time minus
 * the time since that read (the commit's round trip included).
 */
function grant(granted: Granted): LeaseGrant;
function grant(granted: Granted | null): LeaseGrant | null;
function grant(granted: Granted | null): LeaseGrant | null {
  if (!granted) return null;
  const { token, fence, exp, now, readAt } = granted;
  const validForMs = Math.max(1, Math.floor(exp.toMillis() - now.toMillis() - (performance.now() - readAt)));
  return { token, fence, expiresAt: exp.toDate().toISOString(), validForMs };
}
