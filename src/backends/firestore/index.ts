/**
 * Cloud Firestore backend (@google-cloud/firestore): `firestore://PROJECT_ID`. Against the
 * emulator when FIRESTORE_EMULATOR_HOST is set (the client's standard variable), otherwise real
 * Firestore with application default credentials. Query parameters: `prefix` (the root document
 * `dibs/{prefix}` every collection lives under, default `default`), `database` (default
 * `(default)`), `groupMax` / `groupConcurrency` (grouped claims, see claim.ts; `groupMax=1` turns
 * grouping off), `deleteLeaseMs` (the lease of a pool's deleter, default 30000, see
 * pool-deletion.ts; tests shorten it). Collection layout: layout.ts and docs/firestore.md.
 */
import { Firestore } from '@google-cloud/firestore';
import type { Backend, BackendFactory } from '../../core/backend.js';
import { DibsError, isDibsError, unavailable } from '../../core/errors.js';
import type { Health } from '../../core/types.js';
import { translateErrors } from '../shared/translate-errors.js';
import type { ClaimOptions } from './claim.js';
import { Layout } from './layout.js';
import { FirestoreCounters } from './counters.js';
import { FirestoreForecasts } from './forecasts.js';
import { FirestoreLocks } from './locks.js';
import { FirestoreLimits } from './limits.js';
import { FirestoreOutbox } from './outbox.js';
import type { PoolDeletionOptions } from './pool-deletion.js';
import { FirestorePools } from './pools.js';
import { FirestoreServiceStore } from './service.js';
import { FirestoreSales } from './sales.js';
import { FirestoreWaitingRooms } from './waiting-rooms.js';
import { disableCommitRetry, GRPC, isContention, TxRunner, type TxCounters } from './transactions.js';

const RETRIABLE = /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|No connection established|Deadline exceeded|UNAVAILABLE/i;

export function translateFirestoreError(error: unknown): unknown {
  if (isDibsError(error)) return error;
  const code = (error as { code?: unknown })?.code;
  const message = (error as Error)?.message ?? String(error);
  // a store that is unreachable, overloaded or failing inside, or a write that lost to contention
  // and was not retried further (ABORTED, a transaction the emulator rolled back): retriable, never a 500
  const failing =
    isContention(error) ||
    code === GRPC.ABORTED ||
    code === GRPC.UNAVAILABLE ||
    code === GRPC.DEADLINE_EXCEEDED ||
    code === GRPC.RESOURCE_EXHAUSTED ||
    code === GRPC.INTERNAL ||
    code === GRPC.UNKNOWN;
  if (failing || RETRIABLE.test(message)) return unavailable(`firestore: ${message}`, error);
  return error;
}

export class FirestoreBackend implements Backend {
  readonly kind = 'firestore';
  readonly pools: FirestorePools;
  readonly locks: FirestoreLocks;
  readonly counters: FirestoreCounters;
  readonly limits: FirestoreLimits;
  readonly sales: FirestoreSales;
  readonly waitingRooms: FirestoreWaitingRooms;
  readonly forecasts: FirestoreForecasts;
  readonly outbox: FirestoreOutbox;
  readonly service: FirestoreServiceStore;
  readonly layout: Layout;
  private readonly runner: TxRunner;
  private readonly rawLocks: FirestoreLocks;
  private closed = false;

  constructor(
    private readonly db: Firestore,
    readonly prefix: string,
    claimOptions: ClaimOptions = {},
    deletionOptions: PoolDeletionOptions = {},
  ) {
    // a failed commit is left to TxRunner, which never re-runs one that may have applied
    disableCommitRetry(db);
    this.layout = new Layout(db, prefix);
    this.runner = new TxRunner(db);
    this.pools = translateErrors(
      new FirestorePools(this.layout, this.runner, claimOptions, deletionOptions),
      translateFirestoreError,
    );
    this.rawLocks = new FirestoreLocks(this.layout, this.runner);
    this.locks = translateErrors(this.rawLocks, translateFirestoreError);
    this.counters = translateErrors(new FirestoreCounters(this.layout, this.runner), translateFirestoreError);
    this.limits = translateErrors(new FirestoreLimits(this.layout, this.runner), translateFirestoreError);
    this.sales = translateErrors(new FirestoreSales(this.layout, this.runner), translateFirestoreError);
    this.waitingRooms = translateErrors(new FirestoreWaitingRooms(this.layout, this.runner), translateFirestoreError);
    this.forecasts = translateErrors(new FirestoreForecasts(this.layout, this.runner), translateFirestoreError);
    this.outbox = translateErrors(new FirestoreOutbox(this.layout, this.runner), translateFirestoreError);
    this.service = translateErrors(new FirestoreServiceStore(this.layout), translateFirestoreError);
  }

  /** Transactions and attempts so far (attempts > transactions means contention). */
  get transactionCounters(): Readonly<TxCounters> {
    return this.runner.counters;
  }

  async health(): Promise<Health> {
    try {
      const snap = await this.layout.root.get();
      return {
        ok: true,
        backend: this.kind,
        details: {
          projectId: this.projectId(),
          prefix: this.prefix,
          emulator: process.env.FIRESTORE_EMULATOR_HOST ?? null,
          serverTime: snap.readTime.toDate().toISOString(),
        },
      };
    } catch (error) {
      return { ok: false, backend: this.kind, details: { error: (error as Error).message } };
    }
  }

  private projectId(): string {
    return (this.db as unknown as { projectId?: string }).projectId ?? '';
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.rawLocks.close();
    await this.db.terminate();
  }
}

export const openFirestore: BackendFactory = async (url) => {
  const projectId = decodeURIComponent(url.hostname || url.pathname.replace(/^\/+/, ''));
  if (!/^[a-z][a-z0-9-]{1,62}$/.test(projectId))
    throw new DibsError(
      'invalid_input',
      'store: firestore://PROJECT_ID needs a project id (lowercase letters, digits, "-")',
      { field: 'store' },
    );
  const prefix = url.searchParams.get('prefix') ?? 'default';
  if (!/^[A-Za-z0-9][\w.-]{0,63}$/.test(prefix))
    throw new DibsError('invalid_input', 'store: prefix may use letters, digits, "_", "." and "-"', { field: 'store' });
  const databaseId = url.searchParams.get('database') ?? undefined;
  const claimOptions: ClaimOptions = {};
  for (const name of ['groupMax', 'groupConcurrency'] as const) {
    const raw = url.searchParams.get(name);
    if (raw === null) continue;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < 1 || value > 500)
      throw new DibsError('invalid_input', `store: ${name} must be a whole number from 1 to 500`, { field: 'store' });
    claimOptions[name] = value;
  }
  const deletionOptions: PoolDeletionOptions = {};
  const lease = url.searchParams.get('deleteLeaseMs');
  if (lease !== null) {
    const value = Number(lease);
    if (!Number.isInteger(value) || value < 100 || value > 3_600_000)
      throw new DibsError('invalid_input', 'store: deleteLeaseMs must be a whole number from 100 to 3600000', {
        field: 'store',
      });
    deletionOptions.leaseMs = value;
  }
  const db = new Firestore({ projectId, ...(databaseId ? { databaseId } : {}), ignoreUndefinedProperties: true });
  return new FirestoreBackend(db, prefix, claimOptions, deletionOptions);
};
