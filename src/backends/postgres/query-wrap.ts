/**
 * Replaces one connection's `query` with `run(config, values)` for the calls `wraps` accepts,
 * keeping both of pg's call styles (a promise, or a trailing callback); every other call (streams
 * such as COPY, and whatever `wraps` declines) goes to the original as given. Shared by the
 * pooler's transaction scoping (pooler.ts) and the re-preparing of stale statements (stale-plans.ts).
 */
import type pg from 'pg';

export type Query = (...args: unknown[]) => unknown;

export function wrapQuery(
  client: pg.ClientBase,
  wraps: (config: unknown) => boolean,
  /** Runs a wrapped call; it reaches the driver through the original `query`, bound before this wraps it. */
  run: (config: unknown, values: unknown) => Promise<unknown>,
  original: Query,
): void {
  (client as unknown as { query: Query }).query = (...args: unknown[]) => {
    const [config] = args;
    if ((config && typeof (config as { submit?: unknown }).submit === 'function') || !wraps(config))
      return original(...args);
    const callback =
      typeof args[args.length - 1] === 'function'
        ? (args.pop() as (error: unknown, result?: unknown) => void)
        : undefined;
    const promise = run(config, args[1]);
    if (!callback) return promise;
    promise.then(
      (result) => callback(null, result),
      (error: unknown) => callback(error),
    );
    return undefined;
  };
}
