/**
 * A @fastify/rate-limit store over ServiceStore.hitRateLimit (PostgreSQL, Redis): every instance
 * on the store counts against the same per-key window. Stores without it count per instance.
 */
import type { ServiceStore } from '../core/service-store.js';

interface Incr {
  incr(
    key: string,
    callback: (error: Error | null, result?: { current: number; ttl: number }) => void,
    timeWindow: number,
    max: number,
  ): void;
  child(): Incr;
}

export function sharedRateLimitStore(store: ServiceStore): new () => Incr {
  const hit = store.hitRateLimit!.bind(store);
  return class SharedStore implements Incr {
    incr(
      key: string,
      callback: (error: Error | null, result?: { current: number; ttl: number }) => void,
      timeWindow: number,
    ): void {
      hit(key, timeWindow).then(
        ({ current, ttlMs }) => callback(null, { current, ttl: ttlMs }),
        (error: unknown) => callback(error as Error),
      );
    }

    child(): Incr {
      return this;
    }
  };
}
