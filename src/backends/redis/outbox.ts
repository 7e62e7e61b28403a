/**
 * Outbox delivery on Redis. Events stay where their atomic step wrote them — each pool's and each
 * sale's own stream, in that pool's or sale group's slot — and each stream keeps its delivery
 * state beside it (outbox_lib.lua): due and pending zsets, attempts, the log of attempts. Every
 * step on one event is one script in the stream's slot, so this works on a Cluster.
 *
 * `claimDue` spans streams: it peeks at every source (pools from the pool registry, sales from the
 * sale registry), takes the oldest due events overall, and leases them source by source; a
 * script leases an event only if it is still due, so concurrent dispatchers (in any process)
 * never hold the same event, and a caller that lost a race peeks again. The cost is one script
 * per source per call: fine for thousands of pools and sales, not for millions.
 *
 * Event ids are `<p|s>~<pool or sale>~<stream id>` (keys.ts outboxEventId).
 */
import { DibsError } from '../../core/errors.js';
import type {
  DeadLetter,
  DeliveryRecord,
  DueEvent,
  OutboxBackend,
  OutboxStatus,
  RetryOutcome,
} from '../../core/outbox.js';
import { outboxEventId, outboxKeys, poolKeys, registryKey } from './keys.js';
import type { RedisSales } from './sales.js';
import { requestId } from './resend.js';
import { runScript, type RedisClient } from './scripts.js';

interface Source {
  kind: 'p' | 's';
  name: string;
  stream: string;
}

/** How often one claimDue peeks again after racing dispatchers took what it had picked. */
const MAX_ROUNDS = 20;

export class RedisOutbox implements OutboxBackend {
  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    private readonly sales: RedisSales,
  ) {}

  async claimDue(limit: number, leaseMs: number): Promise<DueEvent[]> {
    const leased: { padded: string; event: DueEvent }[] = [];
    for (let round = 0; round < MAX_ROUNDS && leased.length < limit; round++) {
      const want = limit - leased.length;
      const peeks = await Promise.all(
        (await this.sources()).map(async (source) => ({
          source,
          ids: (await runScript(this.client, 'outbox_peek', outboxKeys(source.stream), [want])) as string[],
        })),
      );
      const picked = peeks
        .flatMap(({ source, ids }) => ids.map((padded) => ({ source, padded })))
        .sort((a, b) => compare(a.padded, b.padded) || compare(a.source.stream, b.source.stream))
        .slice(0, want);
      if (picked.length === 0) break;
      const bySource = new Map<Source, string[]>();
      for (const { source, padded } of picked) bySource.set(source, [...(bySource.get(source) ?? []), padded]);
      let got = 0;
      await Promise.all(
        [...bySource].map(async ([source, ids]) => {
          const reply = (await runScript(this.client, 'outbox_lease', outboxKeys(source.stream), [
            leaseMs,
            ...ids,
          ])) as string[];
          for (let i = 0; i < reply.length; i += 6) {
            const [padded, type, key, payload, at, attempts] = reply.slice(i, i + 6) as [
              string,
              string,
              string,
              string,
              string,
              string,
            ];
            leased.push({
              padded,
              event: {
                id: eventId(source, padded),
                type,
                idempotencyKey: key,
                payload: JSON.parse(payload) as Record<string, unknown>,
                createdAt: new Date(Number(at)).toISOString(),
                attempts: Number(attempts),
              },
            });
            got++;
          }
        }),
      );
      if (got === picked.length) break; // nothing was lost to a racing dispatcher: no more is due
    }
    return leased.sort((a, b) => compare(a.padded, b.padded)).map((l) => l.event);
  }

  async markDelivered(id: string, detail: string): Promise<void> {
    await this.settle(id, 'ok', detail, '');
  }

  async markFailed(id: string, detail: string, retryInMs: number | null): Promise<void> {
    await this.settle(id, 'fail', detail, retryInMs === null ? '' : Math.max(0, Math.round(retryInMs)));
  }

  async deliveries(id: string): Promise<DeliveryRecord[]> {
    const { source, padded } = await this.parse(id);
    if (!source) return [];
    const raw = await this.client.hget(outboxKeys(source.stream)[3], `l:${padded}`);
    const log = raw
      ? (JSON.parse(raw) as { attempt: number; ok: boolean; detail: string; at: number }[] | Record<string, never>)
      : [];
    return (Array.isArray(log) ? log : []).map((d) => ({
      attempt: d.attempt,
      ok: d.ok,
      detail: d.detail,
      at: new Date(d.at).toISOString(),
    }));
  }

  async status(): Promise<OutboxStatus> {
    const replies = (await Promise.all(
      (await this.sources()).map((s) => runScript(this.client, 'outbox_status', outboxKeys(s.stream), [])),
    )) as number[][];
    const status: OutboxStatus = { pending: 0, delivered: 0, dead: 0, oldestPendingMs: 0 };
    for (const [pending, delivered, dead, oldest, now] of replies as [number, number, number, number, number][]) {
      status.pending += pending;
      status.delivered += delivered;
      status.dead += dead;
      if (oldest >= 0) status.oldestPendingMs = Math.max(status.oldestPendingMs, now - oldest);
    }
    return status;
  }

  /** Each source's newest dead letters (its dead zset), merged: one script per source. */
  async deadLetters(limit: number): Promise<DeadLetter[]> {
    const lists = await Promise.all(
      (await this.sources()).map(async (source) => {
        const reply = (await runScript(this.client, 'outbox_dead', outboxKeys(source.stream), [limit])) as string[];
        const dead: (DeadLetter & { ms: number })[] = [];
        for (let i = 0; i < reply.length; i += 6) {
          const [padded, type, at, attempts, lastError, deadMs] = reply.slice(i, i + 6) as [
            string,
            string,
            string,
            string,
            string,
            string,
          ];
          dead.push({
            id: eventId(source, padded),
            type,
            createdAt: new Date(Number(at)).toISOString(),
            attempts: Number(attempts),
            lastError,
            deadAt: new Date(Number(deadMs)).toISOString(),
            ms: Number(deadMs),
          });
        }
        return dead;
      }),
    );
    return lists
      .flat()
      .sort((a, b) => b.ms - a.ms)
      .slice(0, limit)
      .map(({ ms: _ms, ...d }) => d);
  }

  async retryNow(id: string): Promise<RetryOutcome> {
    const { source, padded } = await this.parse(id);
    if (!source) return 'missing';
    return (await runScript(this.client, 'outbox_retry', outboxKeys(source.stream), [padded])) as RetryOutcome;
  }

  private async settle(id: string, outcome: 'ok' | 'fail', detail: string, retry: number | ''): Promise<void> {
    const { source, padded } = await this.parse(id);
    if (source)
      await runScript(this.client, 'outbox_settle', outboxKeys(source.stream), [
        padded,
        outcome,
        detail,
        retry,
        requestId(),
      ]);
  }

  private async sources(): Promise<Source[]> {
    const [pools, sales] = await Promise.all([
      this.client.zrange(registryKey(this.prefix), '0', '-1'),
      this.sales.eventStreams(),
    ]);
    return [
      ...pools.map((name): Source => ({ kind: 'p', name, stream: poolKeys(this.prefix, name).events })),
      ...sales.map(({ sale, stream }): Source => ({ kind: 's', name: sale, stream })),
    ];
  }

  /** The source and padded stream id of an event id; source null when the sale is unknown. */
  private async parse(id: string): Promise<{ source: Source | null; padded: string }> {
    const match = /^([ps])~(.+)~(\d{1,15})-(\d{1,10})$/.exec(id);
    if (!match) throw new DibsError('invalid_input', `'${id}' is not an event id`, { field: 'id' });
    const [, kind, name, ms, seq] = match as unknown as [string, 'p' | 's', string, string, string];
    const padded = `${ms.padStart(15, '0')}-${seq.padStart(10, '0')}`;
    if (kind === 'p') return { source: { kind, name, stream: poolKeys(this.prefix, name).events }, padded };
    const stream = await this.sales.eventStream(name);
    return { source: stream ? { kind, name, stream } : null, padded };
  }
}

function eventId(source: Source, padded: string): string {
  const [ms, seq] = padded.split('-') as [string, string];
  return outboxEventId(source.kind, source.name, `${Number(ms)}-${Number(seq)}`);
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
