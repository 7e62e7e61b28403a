/**
 * Which Redis failures are `unavailable` (retriable, HTTP 503 + Retry-After) rather than a bug.
 *
 * Two kinds: the connection is gone or slow (ioredis' own errors), and the server answers but
 * refuses to serve for a while — a demoted primary (READONLY), memory full under noeviction (OOM),
 * a failing RDB save or AOF write, e.g. a full disk (MISCONF), too few replicas (NOREPLICAS), loading a data set (LOADING), a
 * long script (BUSY), a replica whose primary is down (MASTERDOWN), a Cluster without quorum or
 * mid-resharding (CLUSTERDOWN, TRYAGAIN). Server replies are classified by their error code (the
 * first word), never by text found elsewhere in the message.
 *
 * None of these can leave half a step behind: Redis refuses a script's write only while the script
 * has not written yet (after its first write, it lets the script finish), so a refused script
 * changed nothing.
 */
import { DibsError, isDibsError, unavailable } from '../../core/errors.js';

/** Error codes of server replies that mean "this node cannot serve now; retry (elsewhere/later)". */
export const UNAVAILABLE_REPLIES: Readonly<Record<string, string>> = {
  READONLY: 'the node is a read-only replica (a failover demoted it?)',
  OOM: 'Redis is out of memory (maxmemory reached under noeviction)',
  MISCONF:
    'Redis refuses writes because it cannot persist them (an RDB snapshot or AOF write failed: a full disk, a read-only directory)',
  NOREPLICAS: 'not enough replicas acknowledge writes (min-replicas-to-write)',
  LOADING: 'Redis is loading its data set',
  BUSY: 'Redis is busy running a long script',
  MASTERDOWN: 'the replica lost its primary (replica-serve-stale-data no)',
  CLUSTERDOWN: 'the Cluster is down (a slot has no reachable master)',
  TRYAGAIN: 'the Cluster is moving the keys of this step (resharding)',
};

/** Errors of the client: no connection, no answer in time, the Cluster cannot be reached. */
const CONNECTION =
  /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|Connection is closed|Stream isn't writeable|max retries|Reached the max retries|Failed to refresh slots cache|None of startup nodes is available|Command timed out|Too many Cluster redirections|Cluster isn't ready|ClusterAllFailedError/i;

/**
 * The error code of a server reply, when it is one of UNAVAILABLE_REPLIES. Redis 7 passes a
 * refused write inside a script through with its own code ("READONLY … script: …"); Redis 6
 * wrapped it ("ERR Error running script (call to f_…): @user_script:1: -READONLY …").
 */
export function unavailableReply(error: unknown): string | null {
  const message = (error as Error)?.message;
  if (typeof message !== 'string') return null;
  const head = /^([A-Z]+)\b/.exec(message)?.[1];
  if (head && head in UNAVAILABLE_REPLIES) return head;
  const wrapped = /^ERR Error running script[^\n]*?-([A-Z]+)\s/.exec(message)?.[1];
  return wrapped && wrapped in UNAVAILABLE_REPLIES ? wrapped : null;
}

/** Turns a Redis failure that a retry can outlive into `unavailable`; anything else passes unchanged. */
export function translateRedisError(error: unknown): unknown {
  if (isDibsError(error)) return error;
  const message = (error as Error)?.message ?? String(error);
  const reply = unavailableReply(error);
  if (reply) {
    // retryAfterMs: the service's Retry-After (1 s); these states last from a moment (BUSY) to a failover.
    return new DibsError('unavailable', `redis: ${UNAVAILABLE_REPLIES[reply]}: ${message}`, {
      retriable: true,
      cause: error,
      details: { reason: reply, retryAfterMs: 1000 },
    });
  }
  if (
    (error as Error)?.name === 'MaxRetriesPerRequestError' ||
    ((error as Error)?.name !== 'ReplyError' && CONNECTION.test(message))
  )
    return unavailable(`redis: ${message}`, error);
  return error;
}
