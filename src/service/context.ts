import type { Dibs } from '../core/dibs.js';
import type { ServiceStore } from '../core/service-store.js';
import type { DeliveryStats } from '../notify/delivery-stats.js';
import type { KeyVerifier } from './auth/keys.js';
import type { ServiceMetrics } from './metrics.js';

/** What route modules get: the library, the service store, metrics, and the shutdown signal. */
export interface ServiceContext {
  dibs: Dibs;
  store: ServiceStore;
  verifier: KeyVerifier;
  metrics: ServiceMetrics;
  /** Aborted when the server begins to close: a request that only waits (a lock acquire with `waitMs`) gives up then. */
  closing: AbortSignal;
  /** Per-endpoint delivery counts of this process's outbox dispatcher (absent when it runs none). */
  deliveryStats?: DeliveryStats;
}
