/**
 * A storm client that does what the contract tells a client to do with `unavailable` (retriable,
 * `details.retryAfterMs`): wait and send the same call again. A slow store (the Firestore emulator on
 * a loaded CI machine) answers some steps `unavailable` once its 30 s contention bound has passed;
 * a checker that judges every answer by the rules would otherwise see an answer no rule explains.
 *
 * Only a non-ambiguous `unavailable` is retried: it says nothing was applied. An ambiguous one (the
 * commit's outcome unknown, `details.ambiguous`) is handed back as it is, for the checker to judge.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isDibsError } from '../../src/index.js';

export async function retryUnavailable<T>(
  call: () => Promise<T>,
  times = 3,
  options: {
    /** Retry an ambiguous `unavailable` too (its call may have been applied): for a checker that judges re-sent calls. */
    ambiguous?: boolean;
    /** Told before each retry (to count them). */
    onRetry?: () => void;
  } = {},
): Promise<T> {
  for (let retry = 0; ; retry++) {
    try {
      return await call();
    } catch (error) {
      if (retry >= times || !isDibsError(error, 'unavailable')) throw error;
      if (error.details?.ambiguous === true && !options.ambiguous) throw error;
      options.onRetry?.();
      await sleep(Number(error.details?.retryAfterMs ?? 1000));
    }
  }
}
