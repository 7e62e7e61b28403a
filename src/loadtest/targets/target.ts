/**
 * The two sides of a load-test target. Workers only claim (`ClaimClient`); the coordinator
 * sets the pool up and reads its final state (`ControlClient`). Each target kind — the
 * library in-process, a running service over HTTP — implements both.
 */
import type { ImportResult, PoolStats } from '../../core/types.js';
import type { AuditFinding, ClaimOutcome, CodeState, LoadTarget } from '../types.js';

/** The answer part of an outcome. */
export type ClaimAnswer = Pick<ClaimOutcome, 'status' | 'code' | 'held' | 'replayed' | 'error' | 'detail'>;

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
  close(): Promise<void>;
}

export async function openClaimClient(target: LoadTarget): Promise<ClaimClient> {
  if (target.kind === 'url') return new (await import('./http.js')).HttpClaimClient(target);
  return (await import('./library.js')).openLibraryClaimClient(target);
}

export async function openControlClient(target: LoadTarget): Promise<ControlClient> {
  if (target.kind === 'url') return new (await import('./http.js')).HttpControlClient(target);
  return (await import('./library.js')).openLibraryControlClient(target);
}
