/**
 * TEST ONLY: a deliberately broken store for proving that the load tester can fail. It wraps
 * the real backend and, on every 5th claim a process makes, answers with a code that process
 * already gave to somebody else — a double issue (I1), the bug dibs exists to prevent — without
 * touching the store. Loaded by `runLoadtest` / `dibs loadtest` through `storeModule` /
 * `--store-module`, in the coordinator and in every worker process.
 */
import { Dibs, openDibs as openRealDibs, type Backend, type BackendOptions, type ClaimManyResult, type PoolBackend } from '../../src/index.js';

export async function openDibs(store: string, options: BackendOptions = {}): Promise<Dibs> {
  const real = (await openRealDibs(store, options)).backend;
  let calls = 0;
  let lastWinner: { claimant: string; code: string } | null = null;

  async function claim(pool: string, claimant: string, count: number, key: string | null): Promise<ClaimManyResult> {
    calls++;
    if (calls % 5 === 0 && lastWinner !== null && lastWinner.claimant !== claimant) {
      return { pool, claimant, status: 'claimed', codes: [lastWinner.code], held: [lastWinner.code], replayed: false };
    }
    const result = await real.pools.claim(pool, claimant, count, key);
    if (result.status === 'claimed' && result.codes[0] !== undefined) lastWinner = { claimant, code: result.codes[0] };
    return result;
  }

  const pools = new Proxy(real.pools, {
    get(target, property) {
      if (property === 'claim') return claim;
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  }) as PoolBackend;
  const backend: Backend = { kind: real.kind, pools, health: () => real.health(), close: () => real.close() };
  return new Dibs(backend);
}
