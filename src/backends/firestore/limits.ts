/**
 * Rate limits on Firestore. Definitions: `dibs/{prefix}/limits/{b64(name)}` = the definition.
 * State: one document per (limit, key), `dibs/{prefix}/limitState/{b64(name \n key)}` =
 * { name, state (core/limits/rules.ts), by (the admitting attempt) }. A take reads the state
 * document without a lock, decides by that read's time (the server's clock) with rules.ts, and
 * commits an admission only if the document is still the one it read (its update time; `create`
 * when there was none), else reads again: a compare-and-set, as the lock documents do (locks.ts
 * says why not a locking transaction). A denial writes nothing. A commit whose answer was lost
 * is settled by reading the document back: the admission is ours iff it carries our attempt id.
 */
import type { DocumentReference, Timestamp } from '@google-cloud/firestore';
import type { LimitBackend } from '../../core/limits/backend.js';
import { limitExists, limitNotFound } from '../../core/limits/errors.js';
import { decide } from '../../core/limits/rules.js';
import type { LimitDecision, LimitDefinition, LimitPlan, LimitState } from '../../core/limits/types.js';
import { encodeId, type Layout } from './layout.js';
import { contended, GRPC, witnessResolver, type TxRunner } from './transactions.js';

interface StateDoc {
  name: string;
  state: LimitState;
  by: string;
}

const ms = (t: Timestamp) => t.seconds * 1000 + t.nanoseconds / 1e6;
/** Deletes of one limit's key states go in batches of this many. */
const DELETE_BATCH = 400;

export class FirestoreLimits implements LimitBackend {
  constructor(
    private readonly layout: Layout,
    private readonly runner: TxRunner,
  ) {}

  private defRef(name: string): DocumentReference {
    return this.layout.root.collection('limits').doc(encodeId(name));
  }

  private stateRef(name: string, key: string): DocumentReference {
    return this.layout.root.collection('limitState').doc(encodeId(`${name}\n${key}`));
  }

  async create(def: LimitDefinition): Promise<LimitDefinition> {
    try {
      await this.defRef(def.name).create(def);
    } catch (error) {
      if ((error as { code?: unknown }).code === GRPC.ALREADY_EXISTS) throw limitExists(def.name);
      throw error;
    }
    return def;
  }

  async replace(def: LimitDefinition): Promise<LimitDefinition> {
    const ref = this.defRef(def.name);
    return this.runner.run<LimitDefinition>(async (tx) => {
      const snap = await tx.get(ref);
      if (!snap.exists) throw limitNotFound(def.name);
      const stored = { ...def, createdAt: (snap.data() as LimitDefinition).createdAt };
      tx.set(ref, stored);
      return stored;
    });
  }

  async get(name: string): Promise<LimitDefinition | null> {
    const snap = await this.defRef(name).get();
    return snap.exists ? (snap.data() as LimitDefinition) : null;
  }

  async list(): Promise<LimitDefinition[]> {
    const snap = await this.layout.root.collection('limits').get();
    return snap.docs
      .map((d) => d.data() as LimitDefinition)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async remove(name: string): Promise<boolean> {
    const ref = this.defRef(name);
    const existed = (await ref.get()).exists;
    await ref.delete();
    const states = this.layout.root.collection('limitState').where('name', '==', name).limit(DELETE_BATCH);
    // Not bounded by the states there are: a take that still has the definition cached, or a limit
    // created again under this name, writes states of the name while they go, and the loop ends
    // only on an empty page. So it is bounded like a contended step: past the bound it answers
    // `unavailable` (retriable). The definition is already gone; a retry deletes what is left of
    // its states and then answers not_found, as any repeated removal does.
    const since = Date.now();
    for (let round = 1; ; round++) {
      const page = await states.get();
      if (page.empty) break;
      const batch = this.layout.db.batch();
      for (const doc of page.docs) batch.delete(doc.ref);
      await batch.commit();
      if (Date.now() - since > this.runner.deadlineMs) throw contended(round, since, this.runner.deadlineMs);
    }
    return existed;
  }

  /** The decision on one read of the key's state, by that read's server time; nothing written. */
  async peek(plan: LimitPlan, key: string, n: number): Promise<LimitDecision> {
    const snap = await this.stateRef(plan.name, key).get();
    return decide(plan, (snap.data() as StateDoc | undefined)?.state ?? null, n, ms(snap.readTime)).decision;
  }

  async take(plan: LimitPlan, key: string, n: number): Promise<LimitDecision> {
    const ref = this.stateRef(plan.name, key);
    return this.runner.run<LimitDecision>(
      async (tx, _n, attempt) => {
        const snap = await ref.get();
        const doc = snap.data() as StateDoc | undefined;
        const { decision, next } = decide(plan, doc?.state ?? null, n, ms(snap.readTime));
        if (!next) return decision;
        attempt.resolveWith(
          witnessResolver({
            ref,
            guard: snap.exists ? snap.updateTime! : null,
            mine: (back) => ((back.data() as StateDoc | undefined)?.by === attempt.id ? { committed: true } : null),
          }),
        );
        const written: StateDoc = { name: plan.name, state: next, by: attempt.id };
        if (snap.exists) tx.update(ref, { ...written }, { lastUpdateTime: snap.updateTime! });
        else tx.create(ref, written);
        return decision;
      },
      undefined,
      { optimistic: true },
    );
  }

  async reset(plan: LimitPlan, key: string): Promise<void> {
    await this.stateRef(plan.name, key).delete();
  }
}
