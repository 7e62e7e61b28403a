/**
 * The two sides of a load-test target. Workers only send requests (`WorkClient`); the
 * coordinator sets the pool or sale up and reads its final state (`ControlClient`). Each target
 * kind — the library in-process, a running service over HTTP — implements both.
 */
import type { ImportResult, PoolStats } from '../../core/types.js';
import type { AuditFinding, ClaimOutcome, CodeState, LoadTarget, PlannedClaim, SaleFinalStats } from '../types.js';

/** The answer part of an outcome. */
export type ClaimAnswer = Pick<
  ClaimOutcome,
  'status' | 'code' | 'held' | 'replayed' | 'error' | 'detail' | 'units' | 'resource' | 'fence' | 'start' | 'end'
>;

/** What each planned request does, by mode. */
export type WorkMode = { kind: 'pool' } | { kind: 'sale'; qty: number } | { kind: 'locks'; holdMs: number };

/** A worker's client, bound to one pool / sale / key prefix and one mode. */
export interface WorkClient {
  /** Never throws for an answer the store gave (sold_out, unavailable, …): errors are answers too. */
  run(op: PlannedClaim): Promise<ClaimAnswer>;
  close(): Promise<void>;
}

export interface ClaimClient {
  /** Never throws for an answer the store gave (sold_out, unavailable, …): errors are answers too. */
  claim(pool: string, claimant: string, idempotencyKey: string | undefined): Promise<ClaimAnswer>;
  close(): Promise<void>;
}

export interface ControlClient {
  /** `sqlite`, `postgres`, `redis`, … or `http`. */
  readonly backend: string;
  /** Where the load goes, without secrets. */
  readonly address: string;
  createPool(name: string, perClaimantLimit: number): Promise<void>;
  importCodes(pool: string, codes: readonly string[]): Promise<ImportResult>;
  poolInfo(pool: string): Promise<{ perClaimantLimit: number; stats: PoolStats }>;
  exportCodes(pool: string): Promise<CodeState[]>;
  audit(pool: string): Promise<AuditFinding[]>;
  /** Sale mode: a live sale of `cap` units from now for an hour. */
  createSale?(id: string, cap: number, perCustomerLimit: number): Promise<void>;
  saleInfo?(id: string): Promise<SaleFinalStats>;
  auditSale?(id: string): Promise<AuditFinding[]>;
  /** Lock mode: live holders of a key after the run (should be none). */
  lockHolders?(key: string): Promise<number>;
  close(): Promise<void>;
}

export async function openWorkClient(target: LoadTarget, mode: WorkMode, name: string): Promise<WorkClient> {
  if (target.kind === 'url') {
    const module = await import('./http.js');
    if (mode.kind !== 'pool') return module.httpWorkClient(target, mode, name);
    const http = new module.HttpClaimClient(target);
    return { run: (op) => http.claim(name, op.claimant, op.key), close: () => http.close() };
  }
  return (await import('./library.js')).openLibraryWorkClient(target, mode, name);
}

export async function openControlClient(target: LoadTarget): Promise<ControlClient> {
  if (target.kind === 'url') return new (await import('./http.js')).HttpControlClient(target);
  return (await import('./library.js')).openLibraryControlClient(target);
}
