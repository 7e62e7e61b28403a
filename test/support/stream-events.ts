/**
 * Outbox events for delivery tests, made by real steps: each redeem + unredeem of a claimed code
 * records one `code.unredeemed` event. Also the stream reader the tests judge by.
 */
import { Redis } from 'ioredis';
import type { Dibs, OutboxEvent } from '../../src/index.js';

/** A pool with one claimed code, ready for `addEvents`. */
export async function eventPool(dibs: Dibs, pool = 'events'): Promise<void> {
  await dibs.pools.create({ name: pool });
  await dibs.pools.importCodes(pool, ['E-1']);
  await dibs.pools.claim(pool, 'holder');
}

let order = 0;
/** Records `n` more events (in order). */
export async function addEvents(dibs: Dibs, n: number, pool = 'events'): Promise<void> {
  for (let i = 0; i < n; i++) {
    const orderId = `o-${++order}`;
    await dibs.pools.redeem(pool, 'E-1', { orderId });
    await dibs.pools.unredeem(pool, 'E-1', { orderId });
  }
}

/** Every outbox event, in the order the store recorded them. */
export async function allEvents(dibs: Dibs): Promise<OutboxEvent[]> {
  const events: OutboxEvent[] = [];
  for (;;) {
    const page = await dibs.pools.events({ limit: 1000, ...(events.length ? { after: events.at(-1)!.id } : {}) });
    events.push(...page);
    if (page.length < 1000) return events;
  }
}

/** The event ids in a stream, in stream order, with each entry's fields. */
export async function readStream(redisUrl: string, stream: string): Promise<Record<string, string>[]> {
  const client = new Redis(redisUrl);
  try {
    const entries = await client.xrange(stream, '-', '+');
    return entries.map(([, fields]) =>
      Object.fromEntries(fields.flatMap((_, i) => (i % 2 === 0 ? [[fields[i]!, fields[i + 1]!]] : []))),
    );
  } finally {
    client.disconnect();
  }
}

/** Deletes a stream and the markers of its events. */
export async function dropStream(redisUrl: string, stream: string): Promise<void> {
  const client = new Redis(redisUrl);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `{${stream}}:dibs-sent:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await client.del(...keys);
    } while (cursor !== '0');
    await client.del(stream);
  } finally {
    client.disconnect();
  }
}
