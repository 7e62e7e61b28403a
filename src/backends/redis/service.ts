/**
 * The HTTP service's keys and idempotency records in Redis. API keys live under one hash tag
 * (`{prefix:svc}`), so creating one (record + listing index) is one script even on a Cluster.
 * An idempotency record is one string key with a TTL (PX): insert-if-absent is `SET … NX PX`.
 * A rate-limit window is one counter key with the window as its TTL (rate_limit_hit.lua).
 */
import type { ApiKeyRecord, IdempotencyBegin, ServiceStore, StoredResponse } from '../../core/service-store.js';
import { runScript, type RedisClient } from './scripts.js';
import { writeAcked } from './acks.js';

interface IdemValue {
  f: string;
  r?: StoredResponse;
}

export class RedisServiceStore implements ServiceStore {
  private readonly tag: string;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {
    this.tag = `{${prefix}:svc}`;
  }

  private keyOf = (id: string) => `${this.tag}:key:${id}`;
  /** One slot per scope (API key): a busy key's records do not all land on one Cluster node. */
  private idemOf = (scope: string, key: string) => `{${this.prefix}:idem:${scope}}:${key}`;

  async insertKey(key: ApiKeyRecord): Promise<void> {
    await runScript(
      this.redis,
      'api_key_insert',
      [this.keyOf(key.id), `${this.tag}:keys`],
      [JSON.stringify(key), Date.parse(key.createdAt), key.id],
    );
  }

  async getKey(id: string): Promise<ApiKeyRecord | null> {
    const raw = await this.redis.get(this.keyOf(id));
    return raw ? (JSON.parse(raw) as ApiKeyRecord) : null;
  }

  async listKeys(tenant?: string): Promise<ApiKeyRecord[]> {
    const ids = await this.redis.zrange(`${this.tag}:keys`, '0', '-1');
    if (ids.length === 0) return [];
    const raws = await this.redis.mget(...ids.map(this.keyOf));
    return raws
      .flatMap((raw) => (raw ? [JSON.parse(raw) as ApiKeyRecord] : []))
      .filter((k) => tenant === undefined || k.tenant === tenant);
  }

  async revokeKey(id: string): Promise<ApiKeyRecord | null> {
    // Rare and idempotent: two racing revokes both leave the key revoked (one time wins).
    const raw = await this.redis.get(this.keyOf(id));
    if (!raw) return null;
    const record = JSON.parse(raw) as ApiKeyRecord;
    if (record.revokedAt) return record;
    const revoked = { ...record, revokedAt: await this.serverTime() };
    await writeAcked(this.redis, (p) => p.set(this.keyOf(id), JSON.stringify(revoked)));
    return revoked;
  }

  async beginIdempotent(
    scope: string,
    key: string,
    fingerprint: string,
    inFlightTtlMs: number,
  ): Promise<IdempotencyBegin> {
    const k = this.idemOf(scope, key);
    for (;;) {
      if (
        (await this.redis.set(k, JSON.stringify({ f: fingerprint } satisfies IdemValue), 'PX', inFlightTtlMs, 'NX')) ===
        'OK'
      )
        return { state: 'started' };
      const raw = await this.redis.get(k);
      if (raw === null) continue; // expired between the two commands: try to take it again
      const value = JSON.parse(raw) as IdemValue;
      return value.r
        ? { state: 'done', fingerprint: value.f, response: value.r }
        : { state: 'in_flight', fingerprint: value.f };
    }
  }

  async completeIdempotent(scope: string, key: string, response: StoredResponse, ttlMs: number): Promise<void> {
    const k = this.idemOf(scope, key);
    const raw = await this.redis.get(k);
    const f = raw ? (JSON.parse(raw) as IdemValue).f : '';
    await this.redis.set(k, JSON.stringify({ f, r: response } satisfies IdemValue), 'PX', ttlMs);
  }

  async abandonIdempotent(scope: string, key: string): Promise<void> {
    // Only the request that started the record abandons it, and only while it is in flight.
    const k = this.idemOf(scope, key);
    const raw = await this.redis.get(k);
    if (raw && !(JSON.parse(raw) as IdemValue).r) await this.redis.del(k);
  }

  async purgeExpired(): Promise<number> {
    return 0; // Redis expires records and rate-limit windows by itself (PX)
  }

  async hitRateLimit(key: string, windowMs: number): Promise<{ current: number; ttlMs: number }> {
    // One slot per limited key, like idempotency scopes: busy keys spread over a Cluster.
    const [current, ttlMs] = (await runScript(
      this.redis,
      'rate_limit_hit',
      [`{${this.prefix}:rl:${key}}`],
      [windowMs],
    )) as [number, number];
    return { current, ttlMs };
  }

  private async serverTime(): Promise<string> {
    const [seconds, micros] = await this.redis.time();
    return new Date(Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)).toISOString();
  }
}
