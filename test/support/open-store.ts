/**
 * openDibs for a test process or storm worker whose store may still be coming up: a Redis Cluster
 * client not 'ready' within the open's own bound (10 s) answers `unavailable` ("Cluster isn't
 * ready" — seen at load, reconnecting to a cluster through a link just healed); it is opened again
 * until the store answers, as a client told `unavailable` would. The bound only catches a store
 * that never comes up.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isDibsError, openDibs, type Dibs } from '../../src/index.js';

export async function openWhenReachable(
  store: string,
  options: Parameters<typeof openDibs>[1] = {},
  boundMs = 120_000,
): Promise<Dibs> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    try {
      return await openDibs(store, options);
    } catch (error) {
      if (!isDibsError(error, 'unavailable') || Date.now() > deadline) throw error;
      await sleep(500);
    }
  }
}
