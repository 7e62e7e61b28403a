import type { Dibs } from '../core/dibs.js';
import type { ServiceStore } from '../core/service-store.js';
import type { KeyVerifier } from './auth/keys.js';
import type { ServiceMetrics } from './metrics.js';

/** What route modules get: the library, the service store, metrics. */
export interface ServiceContext {
  dibs: Dibs;
  store: ServiceStore;
  verifier: KeyVerifier;
  metrics: ServiceMetrics;
}
