/**
 * Redis sharded counters: one hash per counter whose fields are the shards, so incr and the
 * exact read are each one script on one slot. Redis executes commands one at a time, so shards
 * cannot relieve lock contention the way rows do in PostgreSQL; the contention signal here is
 * the server-measured write rate of the counter (more than CONTENDED_WRITES_PER_SEC per shard in
 * one server second doubles the shards, never shrinking). The contract and the shard count then
 * behave as on the other stores, and a later spread of shards over slots changes no caller.
 */
import type { CounterBackend } from '../../core/locks/backend.js';
import type { CounterValue } from '../../core/locks/types.js';
import type { Page } from '../../core/types.js';
import { counterKey } from './keys.js';
import { globLiteral, scanNames } from './scan-names.js';
import { runScript, type RedisClient } from './scripts.js';
import { writeAcked } from './acks.js';
import { REPLAY_MS, replayKey, requestId } from './resend.js';

export const CONTENDED_WRITES_PER_SEC = 500;
export const MAX_SHARDS = 64;

export class RedisCounters implements CounterBackend {
  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
  ) {}

  async incr(name: string, by: number): Promise<CounterValue> {
    const key = counterKey(this.prefix, name);
    const [value, shards] = (await runScript(
      this.client,
      'counter_incr',
      [key, replayKey(key, requestId())],
      [by, CONTENDED_WRITES_PER_SEC, MAX_SHARDS, REPLAY_MS],
    )) as [string, number];
    return { name, value: Number(value), shards: Number(shards) };
  }

  async get(name: string): Promise<CounterValue> {
    const [value, shards] = (await runScript(this.client, 'counter_get', [counterKey(this.prefix, name)], [])) as [
      string,
      number,
    ];
    return { name, value: Number(value), shards: Number(shards) };
  }

  /** Counters with a value stored (a reset one is gone): one SCAN of every master per page (scan-names.ts). */
  listNames(options: { limit: number; after?: string }): Promise<Page<string>> {
    const start = counterKey(this.prefix, '').slice(0, -1); // `{prefix:counter:`
    return scanNames(
      this.client,
      `${globLiteral(start)}*}`,
      (key) => (key.startsWith(start) && key.endsWith('}') ? key.slice(start.length, -1) : null),
      options,
    );
  }

  async reset(name: string): Promise<void> {
    await writeAcked(this.client, (p) => p.del(counterKey(this.prefix, name)));
  }
}
