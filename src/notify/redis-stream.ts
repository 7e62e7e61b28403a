/**
 * Outbox events to a Redis stream (XADD), for receivers that already run Redis: consumer groups
 * give them load balancing, acknowledgements and redelivery of their own (docs/operations.md).
 *
 * A destination is a URL: `redis://[user:pass@]host:6379/0?stream=dibs:events&maxlen=100000`
 * (`rediss://` for TLS). `stream` defaults to `dibs:events`; `maxlen` trims the stream
 * approximately (`MAXLEN ~`), never by default.
 *
 * Delivery is the dispatcher's (leases, retries, dead letters, the delivery log). This adds:
 * - once per stream: each append also writes a marker for the event (kept MARKER_TTL_MS), so a
 *   redelivery — a retry after a lost answer, or a dispatcher that died mid-delivery — appends
 *   nothing (stream-append.lua);
 * - order: appends run one at a time in the order the dispatcher hands events over (its batches
 *   are oldest first). After a failure the stream is held for a backoff; every event refused
 *   meanwhile is given back (a failed attempt) due after the hold and after every event given
 *   back before it, and no event is appended while an earlier one given back is still to come
 *   back. So after an outage the events go out oldest first. Limits: the order is one
 *   dispatcher's; several (instances, --workers) each keep their own events in order but may
 *   interleave, and the events a dispatcher had leased when it died come back when their lease
 *   ends, after newer ones. An event dead-lettered after the retry budget is skipped.
 */
import { readFileSync } from 'node:fs';
import type { Redis as RedisClient } from 'ioredis';
import type { DueEvent } from '../core/outbox.js';
import { DibsError } from '../core/errors.js';
import { traceHeaders } from '../tracing/delivery.js';
import { DeliveryError, type Destination } from './channels.js';

const APPEND = readFileSync(new URL('./stream-append.lua', import.meta.url), 'utf8');
/** How long a delivered event's marker stays: far beyond any retry or lease of its delivery. */
const MARKER_TTL_MS = 24 * 3600_000;
/** Spacing of the held-back events' due times: keeps their order against store-side clock jitter. */
const HELD_SPACING_MS = 5;

export interface StreamTarget {
  /** The Redis URL without dibs' own parameters. */
  redisUrl: string;
  stream: string;
  maxLen: number | null;
}

/** Parses a destination URL; bad ones are `invalid_input` naming `field`. */
export function parseStreamTarget(spec: string, field = 'DIBS_EVENT_STREAMS'): StreamTarget {
  let url: URL;
  try {
    url = new URL(spec);
  } catch {
    throw new DibsError(
      'invalid_input',
      `${field}: '${redactUrl(spec)}' is not a URL (e.g. redis://127.0.0.1:6379/0?stream=dibs:events)`,
      { field },
    );
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new DibsError(
      'invalid_input',
      `${field}: unsupported destination '${url.protocol}' (supported: redis://, rediss://)`,
      { field },
    );
  }
  const stream = url.searchParams.get('stream') ?? 'dibs:events';
  const maxRaw = url.searchParams.get('maxlen');
  const maxLen = maxRaw === null ? null : Number(maxRaw);
  const unknown = [...url.searchParams.keys()].filter((k) => k !== 'stream' && k !== 'maxlen');
  if (unknown.length > 0)
    throw new DibsError(
      'invalid_input',
      `${field}: unknown parameter(s) '${unknown.join("', '")}' (known: stream, maxlen)`,
      { field },
    );
  if (stream === '') throw new DibsError('invalid_input', `${field}: stream must not be empty`, { field });
  if (maxLen !== null && !(Number.isInteger(maxLen) && maxLen > 0))
    throw new DibsError('invalid_input', `${field}: maxlen must be a positive integer`, { field });
  url.search = '';
  return { redisUrl: url.toString(), stream, maxLen };
}

export interface RedisStreamOptions {
  /** Hold after consecutive failures: baseMs doubling up to maxMs (default 1 s … 15 min, as the dispatcher). */
  backoff?: { baseMs: number; maxMs: number };
  /** One append's bound (default 5 s). */
  timeoutMs?: number;
  /**
   * How long events wait for an earlier one that was given back and does not come back (default
   * 60 s, the dispatcher's lease): it was dead-lettered for another destination, or another
   * dispatcher delivered it.
   */
  orderGraceMs?: number;
}

export class RedisStreamDestination implements Destination {
  private chain: Promise<unknown> = Promise.resolve();
  private failures = 0;
  private heldUntil = 0;
  /** Events given back (held back, or failed) and not appended yet, in the order they were given back. */
  private readonly waiting: { id: string; dueAt: number }[] = [];
  /** The next due time to hand out: each event given back is due after every one before it. */
  private nextSlot = 0;

  private constructor(
    private readonly client: RedisClient,
    readonly target: StreamTarget,
    private readonly options: RedisStreamOptions,
  ) {}

  /** Connects lazily (at the first event); ioredis missing is `unsupported`, naming the package. */
  static async open(spec: string, options: RedisStreamOptions = {}): Promise<RedisStreamDestination> {
    const target = parseStreamTarget(spec);
    let Redis: typeof import('ioredis').Redis;
    try {
      Redis = (await import('ioredis')).Redis;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
        throw new DibsError(
          'unsupported',
          "event streams to Redis need the npm package 'ioredis', which is not installed: npm install ioredis",
          {
            field: 'DIBS_EVENT_STREAMS',
            details: { package: 'ioredis', install: 'npm install ioredis' },
            cause: error,
          },
        );
      }
      throw error;
    }
    const timeoutMs = options.timeoutMs ?? 5000;
    const client = new Redis(target.redisUrl, {
      lazyConnect: true,
      // a destination that is down fails the attempt at once (the dispatcher retries it), rather
      // than queueing appends in memory
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: timeoutMs,
      commandTimeout: timeoutMs,
      retryStrategy: (attempt: number) => Math.min(50 * 2 ** attempt, 2000),
    });
    client.on('error', () => {}); // each failure is an attempt's error, in the delivery log
    client.defineCommand('dibsStreamAppend', { numberOfKeys: 2, lua: APPEND });
    return new RedisStreamDestination(client, target, options);
  }

  /** Where events go, without credentials (for logs and the delivery log). */
  get label(): string {
    return `${redactUrl(this.target.redisUrl)} stream ${this.target.stream}`;
  }

  deliver(event: DueEvent, lastAttempt = false): Promise<string> {
    // Called in the dispatcher's order; appends run one after another in that order.
    const turn = this.chain.then(() => this.append(event, lastAttempt));
    this.chain = turn.catch(() => undefined);
    return turn;
  }

  private async append(event: DueEvent, lastAttempt: boolean): Promise<string> {
    const now = Date.now();
    this.forgetLost(now);
    const mine = this.waiting.findIndex((w) => w.id === event.id);
    const ahead = mine === -1 ? this.waiting.length : mine;
    if (now < this.heldUntil)
      return this.giveBack(
        event,
        now,
        lastAttempt,
        `XADD ${this.target.stream}: held back after a failure (events keep their order)`,
      );
    if (ahead > 0)
      return this.giveBack(
        event,
        now,
        lastAttempt,
        `XADD ${this.target.stream}: held back behind ${ahead} earlier event(s) (events keep their order)`,
      );
    try {
      if (this.client.status === 'wait' || this.client.status === 'end') await this.client.connect();
      const fields = [
        'id',
        event.id,
        'type',
        event.type,
        'idempotencyKey',
        event.idempotencyKey,
        'createdAt',
        event.createdAt,
        'data',
        JSON.stringify(event.payload),
      ];
      for (const [name, value] of Object.entries(traceHeaders())) fields.push(name, value);
      const [added, entry] = (await (this.client as unknown as Appender).dibsStreamAppend(
        this.target.stream,
        markerKey(this.target.stream, event.id),
        MARKER_TTL_MS,
        this.target.maxLen ?? '',
        ...fields,
      )) as [number, string];
      this.failures = 0;
      if (mine !== -1) this.waiting.splice(mine, 1);
      return added === 1
        ? `XADD ${this.target.stream}: ${entry}`
        : `XADD ${this.target.stream}: already there as ${entry}`;
    } catch (error) {
      this.failures++;
      const { baseMs, maxMs } = this.options.backoff ?? { baseMs: 1000, maxMs: 15 * 60_000 };
      const at = Date.now();
      this.heldUntil = at + Math.min(maxMs, baseMs * 2 ** (this.failures - 1));
      return this.giveBack(event, at, lastAttempt, `XADD ${this.target.stream}: ${(error as Error).message}`);
    }
  }

  /**
   * Refuses the event for now (retriable), due again after the hold and after every event given
   * back before it — so they come back, and go out, oldest first. On its last attempt it will be
   * dead-lettered, and the events behind it no longer wait for it.
   */
  private giveBack(event: DueEvent, now: number, lastAttempt: boolean, message: string): never {
    const mine = this.waiting.findIndex((w) => w.id === event.id);
    if (lastAttempt) {
      if (mine !== -1) this.waiting.splice(mine, 1);
      throw new DeliveryError(message, true);
    }
    const dueAt = Math.max(now, this.heldUntil, this.nextSlot);
    this.nextSlot = dueAt + HELD_SPACING_MS;
    if (mine === -1) this.waiting.push({ id: event.id, dueAt });
    else this.waiting[mine]!.dueAt = dueAt;
    throw new DeliveryError(message, true, dueAt - now);
  }

  /**
   * An event given back that has not returned long after it was due went elsewhere: dead-lettered
   * for another destination's failure, or taken by another dispatcher. The rest stop waiting for it.
   */
  private forgetLost(now: number): void {
    const graceMs = this.options.orderGraceMs ?? 60_000;
    for (let i = this.waiting.length - 1; i >= 0; i--)
      if (now > this.waiting[i]!.dueAt + graceMs) this.waiting.splice(i, 1);
  }

  async close(): Promise<void> {
    await this.chain;
    if (this.client.status === 'wait' || this.client.status === 'end') return void this.client.disconnect();
    await this.client.quit().catch(() => this.client.disconnect());
  }
}

type Appender = { dibsStreamAppend(...args: (string | number)[]): Promise<unknown> };

/** The event's marker, in the stream's hash slot (a Cluster runs the script on one node). */
function markerKey(stream: string, eventId: string): string {
  const tagged = /\{[^}]+\}/.test(stream);
  return tagged ? `${stream}:dibs-sent:${eventId}` : `{${stream}}:dibs-sent:${eventId}`;
}

function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@');
}
