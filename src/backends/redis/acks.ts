/**
 * Replica acknowledgement (`?acks=replicas:N`, `acksTimeoutMs`): a mutating script's answer is
 * returned only once N replicas of the master that ran it have acknowledged it.
 *
 * Why a pipeline: WAIT is per connection — it waits for the replication offset of *that
 * connection's* last write. The script and its WAIT are therefore written together as one
 * pipeline (no MULTI: WAIT is not allowed inside one), so both travel on the same socket, to the
 * same server, in order. On a Cluster, ioredis routes a pipeline by the slot of its keys; the
 * keyless WAIT goes with it to the master that ran the script, and counts that master's replicas
 * (acks apply per master). A connection that is re-established between the two fails or re-sends
 * both, never the WAIT alone on a fresh socket (which would answer at once and prove nothing).
 *
 * Too few replicas in time → `unavailable`. The write itself may still survive (it was applied on
 * the master, and may reach the replicas later): callers retry with their idempotency key, which
 * replays it instead of taking a second code or unit.
 *
 * WAITAOF (Redis ≥ 7.2) is used in place of WAIT when the master runs AOF and `acksAof=1`: it
 * also waits for the fsync of the AOF locally and on the replicas. Servers before 7.2 have only WAIT.
 */
import type { ChainableCommander, Cluster } from 'ioredis';
import { DibsError, unavailable } from '../../core/errors.js';
import type { RedisClient } from './scripts.js';

export interface AckPolicy {
  /** Replicas that must acknowledge every mutating step. */
  replicas: number;
  /** How long a WAIT may block before the step answers `unavailable`. */
  timeoutMs: number;
  /** Use WAITAOF (local fsync + replicas' fsync) where the server has it. */
  aof: boolean;
}

/** Reads and removes `acks`, `acksTimeoutMs`, `acksAof` from a store URL; undefined when acks are off. */
export function ackPolicyFromUrl(url: URL, commandTimeoutMs: number): AckPolicy | undefined {
  const acks = url.searchParams.get('acks');
  const timeout = url.searchParams.get('acksTimeoutMs');
  const aof = url.searchParams.get('acksAof');
  for (const name of ['acks', 'acksTimeoutMs', 'acksAof']) url.searchParams.delete(name);
  if (acks === null || acks === 'none' || acks === 'master') return undefined;
  const match = /^replicas:(\d{1,2})$/.exec(acks);
  if (!match || Number(match[1]) < 1)
    throw new DibsError('invalid_input', 'store: acks must be none or replicas:N (N from 1 to 99)', { field: 'store' });
  const timeoutMs = timeout === null ? Math.min(2000, commandTimeoutMs / 2) : Number(timeout);
  if (!Number.isInteger(timeoutMs) || timeoutMs < 10 || timeoutMs >= commandTimeoutMs) {
    throw new DibsError(
      'invalid_input',
      'store: acksTimeoutMs must be a whole number of ms, at least 10 and below commandTimeoutMs',
      { field: 'store' },
    );
  }
  return { replicas: Number(match[1]), timeoutMs, aof: aof === '1' || aof === 'true' };
}

export const describePolicy = (policy: AckPolicy | undefined) =>
  policy
    ? `replicas:${policy.replicas} (timeout ${policy.timeoutMs} ms${policy.aof ? ', WAITAOF where available' : ''})`
    : 'none (asynchronous replication: a failover can lose acknowledged steps)';

/** The policy and what the server supports, attached to a client (so runScript needs no new parameter). */
interface Attached {
  policy: AckPolicy;
  /** Whether WAITAOF is used: the server has it, the master runs AOF and the policy asks for it. */
  waitAof: boolean;
}
const ATTACHED = new WeakMap<object, Attached>();

export function attachAcks(client: RedisClient, policy: AckPolicy, waitAof: boolean): void {
  ATTACHED.set(client, { policy, waitAof });
}

export const acksOf = (client: RedisClient): AckPolicy | undefined => ATTACHED.get(client)?.policy;

/**
 * Scripts whose answers need no acknowledgement: those that never write, and the HTTP rate
 * limiter's counter (a count lost in a failover lets a few more requests through, no more).
 */
const NO_ACKS = new Set([
  'lock_inspect',
  'counter_get',
  'sale_get',
  'sale_holds',
  'sale_audit',
  'cart_get',
  'outbox_peek',
  'outbox_status',
  'code_window',
  'rate_limit_hit',
]);

export const needsAcks = (client: RedisClient, name: string): boolean => ATTACHED.has(client) && !NO_ACKS.has(name);

type Results = [Error | null, unknown][];

/**
 * Runs the commands `build` adds to a pipeline followed by WAIT/WAITAOF, on the connection of the
 * slot of their keys, and answers their replies once enough replicas have them.
 */
async function execAcked(
  client: RedisClient,
  attached: Attached,
  build: (pipeline: ChainableCommander) => ChainableCommander,
): Promise<Results> {
  const { policy, waitAof } = attached;
  const send = () => {
    const pipeline = build(client.pipeline());
    return (
      waitAof
        ? pipeline.call('WAITAOF', 1, policy.replicas, policy.timeoutMs)
        : pipeline.wait(policy.replicas, policy.timeoutMs)
    ).exec() as Promise<Results | null>;
  };
  const errorOf = (r: Results | null) => String(r?.[0]?.[0]?.message ?? '');
  let results = await send();
  // MOVED: the slot has a new master (a failover). The commands did not run, so they are re-sent
  // once the client has learnt the new slot map. ioredis follows MOVED in a pipeline only when
  // every command got it, and WAIT (keyless) never does.
  for (
    let attempt = 0;
    /^(MOVED|ASK) /.test(errorOf(results)) && 'refreshSlotsCache' in client && attempt < 5;
    attempt++
  ) {
    await new Promise<void>((resolve) => (client as Cluster).refreshSlotsCache(() => resolve()));
    results = await send();
  }
  if (/^(MOVED|ASK) /.test(errorOf(results))) throw unavailable(`redis: the slot is moving (${errorOf(results)})`);
  if (!results) throw unavailable('redis: the pipeline was not executed');
  const [waitError, acked] = results.at(-1)!;
  const replies = results.slice(0, -1);
  // a command's own error first: the WAIT after a failed command proves nothing
  const failed = replies.find(([error]) => error);
  if (failed) throw failed[0];
  if (waitError)
    throw unavailable(
      `redis: the replica acknowledgement failed (${waitError.message}); the step may still have been applied — retry with the idempotency key`,
      waitError,
    );
  const replicas = waitAof ? Number((acked as number[])[1]) : Number(acked);
  const local = waitAof ? Number((acked as number[])[0]) : 1;
  if (replicas < policy.replicas || local < 1) {
    throw unavailable(
      `redis: only ${replicas} of ${policy.replicas} replica(s) acknowledged within ${policy.timeoutMs} ms; the step may still have been applied — retry with the idempotency key`,
    );
  }
  return replies;
}

/**
 * Runs `EVALSHA` (or `EVAL` when the server lacks the script) followed by WAIT/WAITAOF in one
 * pipeline, and answers the script's reply once enough replicas have it.
 */
export async function runAcked(
  client: RedisClient,
  sha: string,
  source: string,
  keys: string[],
  args: (string | number)[],
): Promise<unknown> {
  const attached = ATTACHED.get(client)!;
  try {
    return (await execAcked(client, attached, (p) => p.evalsha(sha, keys.length, ...keys, ...args)))[0]![1];
  } catch (error) {
    if (!String((error as Error).message).startsWith('NOSCRIPT')) throw error;
    return (await execAcked(client, attached, (p) => p.eval(source, keys.length, ...keys, ...args)))[0]![1];
  }
}

/**
 * A write that is not a script (a DEL, a ZADD, an inline MULTI … EXEC), acknowledged under the
 * client's policy like a script's step: without it, a deleted pool or a new API key could come
 * back or vanish after a failover although the call succeeded. The commands must share one slot
 * (on a Cluster, the pipeline goes to that slot's master). Answers each command's reply.
 */
export async function writeAcked(
  client: RedisClient,
  build: (pipeline: ChainableCommander) => ChainableCommander,
): Promise<unknown[]> {
  const attached = ATTACHED.get(client);
  if (attached) return (await execAcked(client, attached, build)).map(([, reply]) => reply);
  const results = (await build(client.pipeline()).exec()) as Results | null;
  if (!results) throw unavailable('redis: the pipeline was not executed');
  const failed = results.find(([error]) => error);
  if (failed) throw failed[0];
  return results.map(([, reply]) => reply);
}
