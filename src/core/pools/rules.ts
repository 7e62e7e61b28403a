/** The rules of pool steps: the reference model every store is held to (../model/pools.ts), and how an update merges. */
import type { PoolPatch, PoolSettings } from './types.js';

export * from '../model/pools.js';

/**
 * A pool's settings after `patch`: a field the patch leaves out (undefined) keeps its value, null
 * clears it. Stores that write the whole row (SQLite, PostgreSQL) merge here; Redis's update script
 * and Firestore's document update write only the fields the patch names, which is the same merge.
 */
export function mergePoolSettings(current: PoolSettings, patch: PoolPatch): PoolSettings {
  const pick = <K extends keyof PoolSettings>(key: K): PoolSettings[K] =>
    patch[key] === undefined ? current[key] : (patch[key] as PoolSettings[K]);
  return {
    perClaimantLimit: pick('perClaimantLimit'),
    lowStockThreshold: pick('lowStockThreshold'),
    metadata: pick('metadata'),
    startsAt: pick('startsAt'),
    expiresAt: pick('expiresAt'),
    maxRedemptions: pick('maxRedemptions'),
    maxRedemptionsPerClaimant: pick('maxRedemptionsPerClaimant'),
    publicCodes: pick('publicCodes'),
    codeFormat: pick('codeFormat'),
  };
}
