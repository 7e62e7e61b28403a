/**
 * The hook store adapters call where they run a step again (a deadlock victim, a contended
 * transaction, a claim that lost a race): it counts the retry on the store step's span
 * (`dibs.retries`). Without tracing it is one null check.
 */
import { activeOtel, contextKeys } from './otel.js';

export function noteStoreRetry(): void {
  const api = activeOtel();
  if (!api) return;
  const step = api.context.active().getValue(contextKeys().step) as { retries: number } | undefined;
  if (step) step.retries++;
}
