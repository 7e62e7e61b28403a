import { refusal, scriptRefusal } from '../../core/refusals.js';
import { randomUUID } from 'node:crypto';
import type { PoolBackend } from '../../core/pools/backend.js';
import { DibsError, notFound } from '../../core/errors.js';
import {
  counterViolations,
  misListedViolation,
  overLimitViolation,
  unlistedViolation,
  multiUseCode,
  useOf,
} from '../shared/pool-rules.js';
import { withWindow } from '../shared/imported-code.js';
import { codeOutsideWindow, outsideWindow } from '../../core/window.js';
import type {
  CodeFormat,
  ClaimManyResult,
  CodeInfo,
  CodeStatus,
  CodeWindow,
  ImportedCode,
  InsertResult,
  MultiUseCodeSpec,
  OutboxEvent,
  Page,
  Pool,
  PoolPatch,
  PoolSpec,
  PoolStats,
  Violation,
} from '../../core/types.js';
import { outboxKeys, poolKeys, registryKey, type PoolKeys } from './keys.js';
import { refusedReply } from './refused.js';
import { REPLAY_MS, replayKey, requestId } from './resend.js';
import { runScript, type RedisClient } from './scripts.js';
import { writeAcked } from './acks.js';

interface CodeRecord {
  s: CodeStatus;
  h?: string;
  k?: string;
  ca?: number;
  ra?: number;
  o?: string;
  q: number;
  /** checkout hold: claimant, until (epoch ms) */
  hc?: string;
  hu?: number;
  /** the code's own window (epoch ms) */
  vs?: number;
  ve?: number;
}

/** A multi-use code: max uses, per claimant, uses, own window. */
interface MultiRecord {
  m: number;
  p?: number;
  u: number;
  vs?: number;
  ve?: number;
}

const iso = (ms: string | number | undefined | null) =>
  ms === undefined || ms === null || ms === '' ? null : new Date(Number(ms)).toISOString();

export class RedisPools implements PoolBackend {
  /** `pool\ncode` of codes seen to be multi-use (bounded). */
  private readonly multiUseCodes = new Set<string>();

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
  ) {}

  private keys(pool: string): PoolKeys {
    return poolKeys(this.prefix, pool);
  }

  async createPool(spec: PoolSpec): Promise<Pool> {
    const k = this.keys(spec.name);
    const reply = await runScript(
      this.client,
      'create',
      [k.pool, replayKey(k.pool, requestId())],
      [
        spec.name,
        spec.perClaimantLimit,
        spec.lowStockThreshold ?? '',
        JSON.stringify(spec.metadata),
        msOrEmpty(spec.startsAt),
        msOrEmpty(spec.expiresAt),
        spec.maxRedemptions ?? '',
        spec.maxRedemptionsPerClaimant ?? '',
        spec.publicCodes ? '1' : '0',
        spec.codeFormat === null ? '' : JSON.stringify(spec.codeFormat),
        REPLAY_MS,
      ],
    );
    if (Array.isArray(reply)) throw refusedReply(reply, { pool: spec.name });
    // The registry lives in another slot: it is written after the pool (a crash in between leaves
    // a pool that works but is not listed until it is re-registered by the next update).
    await writeAcked(this.client, (p) => p.zadd(registryKey(this.prefix), 0, spec.name));
    return this.getPool(spec.name);
  }

  async getPool(name: string): Promise<Pool> {
    const raw = await this.client.hgetall(this.keys(name).pool);
    if (!raw.name) throw notFound('pool', name);
    return toPool(raw);
  }

  async listPools({ limit, after }: { limit: number; after?: string }): Promise<Page<Pool>> {
    const names = await this.client.zrangebylex(
      registryKey(this.prefix),
      after ? `(${after}` : '-',
      '+',
      'LIMIT',
      0,
      limit + 1,
    );
    const pools = (await Promise.all(names.slice(0, limit).map((n) => this.client.hgetall(this.keys(n).pool))))
      .filter((raw) => raw.name)
      .map(toPool);
    return { items: pools, nextCursor: names.length > limit ? names[limit - 1]! : null };
  }

  async updatePool(name: string, patch: PoolPatch): Promise<Pool> {
    const k = this.keys(name);
    const reply = await runScript(
      this.client,
      'update',
      [k.pool, k.held],
      [
        patch.perClaimantLimit ?? '',
        patch.lowStockThreshold === undefined
          ? ''
          : patch.lowStockThreshold === null
            ? 'null'
            : patch.lowStockThreshold,
        patch.metadata === undefined ? '' : JSON.stringify(patch.metadata),
        patch.startsAt === undefined ? '' : patch.startsAt === null ? 'null' : msOrEmpty(patch.startsAt),
        patch.expiresAt === undefined ? '' : patch.expiresAt === null ? 'null' : msOrEmpty(patch.expiresAt),
        patch.maxRedemptions === undefined ? '' : patch.maxRedemptions === null ? 'null' : patch.maxRedemptions,
        patch.maxRedemptionsPerClaimant === undefined
          ? ''
          : patch.maxRedemptionsPerClaimant === null
            ? 'null'
            : patch.maxRedemptionsPerClaimant,
        patch.publicCodes === undefined ? '' : patch.publicCodes ? '1' : '0',
        patch.codeFormat === undefined ? '' : patch.codeFormat === null ? 'null' : JSON.stringify(patch.codeFormat),
      ],
    );
    if (reply === 'not_found') throw notFound('pool', name);
    if (Array.isArray(reply)) throw refusedReply(reply, { requested: patch.perClaimantLimit });
    await writeAcked(this.client, (p) => p.zadd(registryKey(this.prefix), 0, name));
    return this.getPool(name);
  }

  async deletePool(name: string): Promise<void> {
    const k = this.keys(name);
    // All keys of the pool share one slot: one DEL removes them atomically.
    const [removed] = await writeAcked(this.client, (p) =>
      p.del(
        k.pool,
        k.free,
        k.all,
        k.codes,
        k.held,
        k.claimKeys,
        k.parked,
        k.multi,
        k.uses,
        k.usesBy,
        k.claimed,
        k.watch,
        ...outboxKeys(k.events),
      ),
    );
    await writeAcked(this.client, (p) => p.zrem(registryKey(this.prefix), name));
    if (removed === 0) throw notFound('pool', name);
  }

  async insertCodes(pool: string, codes: readonly ImportedCode[]): Promise<InsertResult> {
    const k = this.keys(pool);
    // a batch without windows stays a plain list of codes (a third of the arguments)
    const windowed = codes.some((c) => typeof c !== 'string');
    const args = windowed
      ? codes.flatMap((c) => {
          const w = withWindow(c);
          return [w.code, msOrEmpty(w.startsAt), msOrEmpty(w.expiresAt)];
        })
      : (codes as readonly string[]);
    const reply = await runScript(
      this.client,
      'insert',
      [k.pool, k.free, k.all, k.codes, k.multi, k.parked, replayKey(k.pool, requestId())],
      [windowed ? 'w' : '', REPLAY_MS, ...args],
    );
    if (reply === 'not_found') throw notFound('pool', pool);
    const [inserted, duplicates] = reply as [number, number];
    return { inserted, duplicates };
  }

  async claim(pool: string, claimant: string, count: number, key: string | null): Promise<ClaimManyResult> {
    const k = this.keys(pool);
    const reply = (await runScript(
      this.client,
      'claim',
      [k.pool, k.free, k.codes, k.held, k.claimKeys, k.events, k.parked, k.claimed],
      [claimant, count, key ?? '', key ? '' : requestId()],
    )) as [string, ...unknown[]];
    switch (reply[0]) {
      case 'not_found':
        throw notFound('pool', pool);
      case 'refused':
        throw scriptRefusal(reply[1], { pool });
      case 'not_yet_valid':
      case 'expired':
        throw await this.outsideWindow(pool, reply[0]);
      case 'conflict':
        throw refusal('key_reused', { key: key!, prior: { claimant: String(reply[1]), count: Number(reply[2]) } });
      case 'claimed':
      case 'replayed':
        return {
          pool,
          claimant,
          status: 'claimed',
          codes: reply[1] as string[],
          held: reply[2] as string[],
          replayed: reply[0] === 'replayed',
        };
      case 'already_held':
        return { pool, claimant, status: 'already-held', codes: [], held: reply[2] as string[], replayed: false };
      default:
        throw new Error(`claim.lua answered ${String(reply[0])}`);
    }
  }

  async release(pool: string, code: string, claimant: string | null): Promise<CodeInfo> {
    const k = this.keys(pool);
    return this.codeReply(
      pool,
      code,
      await runScript(
        this.client,
        'release',
        [k.pool, k.free, k.codes, k.held, k.parked, k.claimed],
        [code, claimant ?? '', requestId()],
      ),
      { claimant },
    );
  }

  async redeem(pool: string, code: string, claimant: string | null, orderId: string | null): Promise<CodeInfo> {
    const k = this.keys(pool);
    // codes known to be multi-use go straight to their script (a code's kind never changes; a pool
    // deleted and re-created answers not_found and is looked up again)
    const known = `${pool}\n${code}`;
    const reply =
      this.multiUseCodes.has(known) && orderId !== null
        ? ['not_found', 'code']
        : await runScript(
            this.client,
            'redeem',
            [k.pool, k.codes, k.held, k.free, k.events, k.parked, k.claimed],
            [code, claimant ?? '', orderId ?? '', orderId === null ? requestId() : ''],
          );
    if (!isCodeNotFound(reply)) return this.codeReply(pool, code, reply, { claimant, orderId });
    // not a single-use code: one use of a multi-use code (a code's kind never changes)
    if (orderId === null) {
      if (await this.client.hexists(k.multi, code)) throw refusal('order_required', { code });
      return this.codeReply(pool, code, reply);
    }
    const use = (await runScript(
      this.client,
      'multi_redeem',
      [k.pool, k.multi, k.uses, k.usesBy],
      [code, claimant ?? '', orderId],
    )) as string[];
    if (isCodeNotFound(use) && this.multiUseCodes.delete(known)) return this.redeem(pool, code, claimant, orderId);
    if (!isCodeNotFound(use)) {
      if (this.multiUseCodes.size >= 10_000) this.multiUseCodes.clear();
      this.multiUseCodes.add(known);
    }
    if (use[0] === 'use')
      return useOf(toMultiCode(pool, code, JSON.parse(use[1]!) as MultiRecord), {
        claimant: use[2] || null,
        at: iso(use[3])!,
        orderId: use[4]!,
      });
    return this.codeReply(pool, code, use, { claimant, orderId });
  }

  async unredeem(pool: string, code: string, orderId: string | null): Promise<CodeInfo> {
    const k = this.keys(pool);
    const reply = await runScript(
      this.client,
      'unredeem',
      [k.pool, k.codes, k.events],
      [code, orderId ?? '', randomUUID()],
    );
    if (!isCodeNotFound(reply)) return this.codeReply(pool, code, reply, { orderId });
    if (orderId === null) {
      if (await this.client.hexists(k.multi, code)) throw refusal('order_required', { code });
      return this.codeReply(pool, code, reply);
    }
    const nonce = randomUUID();
    const back = (await runScript(
      this.client,
      'multi_unredeem',
      [k.pool, k.multi, k.uses, k.usesBy, k.events, replayKey(k.pool, nonce)],
      [code, orderId, nonce, REPLAY_MS],
    )) as string[];
    if (back[0] === 'ok') return toMultiCode(pool, code, JSON.parse(back[1]!) as MultiRecord);
    return this.codeReply(pool, code, back, { orderId });
  }

  async hold(pool: string, code: string, claimant: string, ttlMs: number): Promise<CodeInfo> {
    const k = this.keys(pool);
    return this.codeReply(
      pool,
      code,
      await runScript(
        this.client,
        'hold',
        [k.pool, k.codes, k.held, k.free, k.parked, k.multi],
        [code, claimant, ttlMs],
      ),
      { claimant },
    );
  }

  async releaseHold(pool: string, code: string, claimant: string | null): Promise<CodeInfo> {
    const k = this.keys(pool);
    return this.codeReply(
      pool,
      code,
      await runScript(
        this.client,
        'hold_release',
        [k.pool, k.codes, k.free, k.parked, k.multi],
        [code, claimant ?? ''],
      ),
    );
  }

  async setCodeWindow(pool: string, code: string, window: CodeWindow): Promise<CodeInfo> {
    const k = this.keys(pool);
    const reply = (await runScript(
      this.client,
      'code_window',
      [k.pool, k.codes, k.free, k.parked, k.multi],
      [code, msOrEmpty(window.startsAt), msOrEmpty(window.expiresAt)],
    )) as string[];
    if (reply[0] === 'multi') return toMultiCode(pool, code, JSON.parse(reply[1]!) as MultiRecord);
    return this.codeReply(pool, code, reply);
  }

  async addMultiUseCode(pool: string, spec: MultiUseCodeSpec): Promise<CodeInfo> {
    const k = this.keys(pool);
    const reply = (await runScript(
      this.client,
      'multi_add',
      [k.pool, k.codes, k.multi, replayKey(k.pool, requestId())],
      [
        spec.code,
        spec.uses,
        spec.usesPerClaimant ?? '',
        msOrEmpty(spec.startsAt),
        msOrEmpty(spec.expiresAt),
        REPLAY_MS,
      ],
    )) as string[];
    if (reply[0] === 'not_found') throw notFound('pool', pool);
    if (reply[0] === 'refused') throw refusedReply(reply, { code: spec.code });
    return toMultiCode(pool, spec.code, JSON.parse(reply[1]!) as MultiRecord);
  }

  async revoke(pool: string, code: string): Promise<CodeInfo> {
    const k = this.keys(pool);
    return this.codeReply(
      pool,
      code,
      await runScript(
        this.client,
        'revoke',
        [k.pool, k.free, k.codes, k.held, k.events, k.parked, k.claimed],
        [code, requestId()],
      ),
    );
  }

  async clock(): Promise<string> {
    const [seconds, micros] = await this.client.time();
    return new Date(Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)).toISOString();
  }

  async getCode(pool: string, code: string, claimant?: string | null): Promise<CodeInfo> {
    const k = this.keys(pool);
    const [exists, raw] = await Promise.all([this.client.exists(k.pool), this.client.hget(k.codes, code)]);
    if (!exists) throw notFound('pool', pool);
    if (raw !== null) {
      const rec = JSON.parse(raw) as CodeRecord;
      // a hold is reported only while live by the server's clock (read only when there is one)
      return toCode(pool, code, rec, rec.hu === undefined ? undefined : Date.parse(await this.clock()));
    }
    const [multi, mine] = await Promise.all([
      this.client.hget(k.multi, code),
      claimant ? this.client.hget(k.usesBy, `${code}\n${claimant}`) : Promise.resolve(null),
    ]);
    if (multi !== null)
      return toMultiCode(pool, code, JSON.parse(multi) as MultiRecord, claimant ? Number(mine ?? 0) : undefined);
    throw notFound('code', code);
  }

  async holdings(pool: string, claimant: string): Promise<CodeInfo[]> {
    const k = this.keys(pool);
    const [exists, raw] = await Promise.all([this.client.exists(k.pool), this.client.hget(k.held, claimant)]);
    if (!exists) throw notFound('pool', pool);
    const codes = raw ? (JSON.parse(raw) as string[]) : [];
    if (codes.length === 0) return [];
    const records = await this.client.hmget(k.codes, ...codes);
    return codes.map((code, i) => toCode(pool, code, JSON.parse(records[i]!) as CodeRecord));
  }

  async stats(pool: string): Promise<PoolStats> {
    const [total, free, claimed, redeemed, revoked] = await this.client.hmget(
      this.keys(pool).pool,
      'total',
      'free',
      'claimed',
      'redeemed',
      'revoked',
    );
    if (total === null) throw notFound('pool', pool);
    return {
      total: Number(total),
      free: Number(free),
      claimed: Number(claimed),
      redeemed: Number(redeemed),
      revoked: Number(revoked),
    };
  }

  async *exportCodes(
    pool: string,
    { status, batchSize }: { status?: CodeStatus; batchSize: number },
  ): AsyncIterable<CodeInfo[]> {
    const k = this.keys(pool);
    if (!(await this.client.exists(k.pool))) throw notFound('pool', pool);
    let after = 0;
    for (;;) {
      const page = await this.client.zrangebyscore(
        k.all,
        `(${after}`,
        '+inf',
        'WITHSCORES',
        'LIMIT',
        '0',
        String(batchSize),
      );
      if (page.length === 0) return;
      const codes = page.filter((_, i) => i % 2 === 0);
      after = Number(page[page.length - 1]);
      const records = await this.client.hmget(k.codes, ...codes);
      const batch = codes
        .map((code, i) => toCode(pool, code, JSON.parse(records[i]!) as CodeRecord))
        .filter((c) => !status || c.status === status);
      if (batch.length > 0) yield batch;
    }
  }

  async audit(pool: string): Promise<Violation[]> {
    const k = this.keys(pool);
    // One MULTI: a consistent snapshot of every structure of the pool.
    const results = await this.client
      .multi()
      .hgetall(k.pool)
      .hgetall(k.codes)
      .zrange(k.free, '0', '-1')
      .hgetall(k.held)
      .hgetall(k.claimKeys)
      .xrange(k.events, '-', '+')
      .zrange(k.parked, '0', '-1')
      .hgetall(k.multi)
      .hgetall(k.uses)
      .hgetall(k.usesBy)
      .exec();
    if (!results) throw new DibsError('unavailable', 'audit snapshot was aborted', { retriable: true });
    const [poolRaw, codesRaw, freeList, heldRaw, keysRaw, events, parkedList, multiRaw, usesRaw, usesByRaw] =
      results.map(([error, value]) => {
        if (error) throw error;
        return value;
      }) as [
        Record<string, string>,
        Record<string, string>,
        string[],
        Record<string, string>,
        Record<string, string>,
        [string, string[]][],
        string[],
        Record<string, string>,
        Record<string, string>,
        Record<string, string>,
      ];
    if (!poolRaw.name) throw notFound('pool', pool);
    const violations: Violation[] = [];
    const limit = Number(poolRaw.limit);
    const ledger: PoolStats = { total: 0, free: 0, claimed: 0, redeemed: 0, revoked: 0 };
    const freeSet = new Set(freeList);
    const parked = new Set(parkedList);
    const records = new Map<string, CodeRecord>();
    for (const [code, raw] of Object.entries(codesRaw)) {
      const rec = JSON.parse(raw) as CodeRecord;
      records.set(code, rec);
      ledger[rec.s]++;
      ledger.total++;
      const holds = rec.s === 'claimed' || rec.s === 'redeemed';
      if (holds !== (rec.h !== undefined))
        violations.push({
          invariant: 'I1',
          pool,
          code,
          message: `code '${code}' is ${rec.s} but its holder is ${rec.h ?? 'missing'}`,
        });
      // a free code is in exactly one of the free set and the parked set (on hold, outside its window)
      const placed = Number(freeSet.has(code)) + Number(parked.has(code));
      if (rec.s === 'free' ? placed !== 1 : placed !== 0)
        violations.push({
          invariant: 'I1',
          pool,
          code,
          message: `code '${code}' is ${rec.s} but is in ${placed === 0 ? 'neither' : placed === 2 ? 'both' : freeSet.has(code) ? 'the free set' : 'the parked set'} of the free and parked sets`,
        });
      if (
        rec.hc !== undefined &&
        (rec.s === 'redeemed' || rec.s === 'revoked' || (rec.s === 'claimed' && rec.hc !== rec.h))
      ) {
        violations.push({
          invariant: 'I1',
          pool,
          code,
          claimant: rec.hc,
          message: `code '${code}' is ${rec.s}${rec.h ? ` by '${rec.h}'` : ''} but held for checkout by '${rec.hc}'`,
        });
      }
      if (holds && rec.h !== undefined && !(JSON.parse(heldRaw[rec.h] ?? '[]') as string[]).includes(code)) {
        violations.push(unlistedViolation(pool, code, rec.h));
      }
    }
    for (const code of freeSet)
      if (!records.has(code))
        violations.push({ invariant: 'I1', pool, code, message: `free set holds unknown code '${code}'` });
    for (const code of parked)
      if (!records.has(code))
        violations.push({ invariant: 'I1', pool, code, message: `parked set holds unknown code '${code}'` });
    violations.push(...multiUseViolations(pool, multiRaw, usesRaw, usesByRaw));
    for (const [claimant, raw] of Object.entries(heldRaw)) {
      const codes = JSON.parse(raw) as string[];
      if (codes.length > limit) violations.push(overLimitViolation(pool, claimant, codes.length, limit));
      for (const code of codes) {
        const holder = records.get(code)?.h;
        if (holder !== claimant) violations.push(misListedViolation(pool, claimant, code, holder));
      }
    }
    for (const [key, raw] of Object.entries(keysRaw)) {
      const owner = (JSON.parse(raw) as { c: string }).c;
      for (const [code, rec] of records) {
        if (rec.k === key && rec.h !== undefined && rec.h !== owner)
          violations.push({
            invariant: 'I2',
            pool,
            code,
            claimant: owner,
            message: `idempotency key '${key}' of '${owner}' points at code '${code}' held by '${rec.h}'`,
          });
      }
    }
    const counters: PoolStats = {
      total: Number(poolRaw.total),
      free: Number(poolRaw.free),
      claimed: Number(poolRaw.claimed),
      redeemed: Number(poolRaw.redeemed),
      revoked: Number(poolRaw.revoked),
    };
    violations.push(...counterViolations(pool, counters, ledger));
    const lowStock = events.filter(([, fields]) => fieldOf(fields, 'type') === 'pool.low_stock').length;
    if (lowStock !== Number(poolRaw.low_events)) {
      violations.push({
        invariant: 'I7',
        pool,
        expected: Number(poolRaw.low_events),
        actual: lowStock,
        message: `${poolRaw.low_events} low-stock crossings were recorded but the stream holds ${lowStock} low-stock events`,
      });
    }
    return violations;
  }

  async listEvents({ after, limit, pool }: { after?: string; limit: number; pool?: string }): Promise<OutboxEvent[]> {
    const pools = pool ? [pool] : await this.client.zrange(registryKey(this.prefix), '0', '-1');
    const start = after ? `(${after}` : '-';
    const perPool = await Promise.all(
      pools.map(async (name) =>
        (await this.client.xrange(this.keys(name).events, start, '+', 'COUNT', String(limit))).map((entry) =>
          toEvent(entry),
        ),
      ),
    );
    return perPool
      .flat()
      .sort((a, b) => compareStreamIds(a.id, b.id))
      .slice(0, limit);
  }

  /** The window error with the pool's window as stored (the script only said which side). */
  private async outsideWindow(pool: string, state: 'not_yet_valid' | 'expired'): Promise<DibsError> {
    const [starts, expires] = await this.client.hmget(this.keys(pool).pool, 'starts', 'expires');
    return outsideWindow(pool, { startsAt: iso(starts), expiresAt: iso(expires) }, state);
  }

  private async codeReply(
    pool: string,
    code: string,
    reply: unknown,
    asked: { claimant?: string | null; orderId?: string | null } = {},
  ): Promise<CodeInfo> {
    const [head, ...rest] = reply as [string, ...string[]];
    if ((head === 'not_yet_valid' || head === 'expired') && rest[1] === 'code')
      throw codeOutsideWindow(code, head, iso(rest[0])!);
    if (head === 'not_yet_valid' || head === 'expired') throw await this.outsideWindow(pool, head);
    if (head === 'not_found') throw notFound(rest[0] === 'pool' ? 'pool' : 'code', rest[0] === 'pool' ? pool : code);
    // a script's refusal by its reason id (with the status, limit, holder and instant it names);
    // the request's own claimant and order fill the rest of the context
    if (head === 'refused') {
      const [reason, status, max, holder, instant] = rest;
      throw scriptRefusal(reason, {
        pool,
        code,
        status,
        claimant: holder || asked.claimant,
        orderId: asked.orderId,
        limit: Number(max),
        max: Number(max),
        at: iso(instant),
        until: iso(instant),
      });
    }
    const [, status, holder, claimedAt, redeemedAt, order, holdClaimant, holdUntil, starts, expires] =
      reply as string[];
    return {
      pool,
      code,
      status: status as CodeStatus,
      claimant: holder || null,
      claimedAt: iso(claimedAt),
      redeemedAt: iso(redeemedAt),
      orderId: order || null,
      ...(starts || expires ? { startsAt: iso(starts), expiresAt: iso(expires) } : {}),
      ...(holdClaimant ? { hold: { claimant: holdClaimant, expiresAt: iso(holdUntil)! } } : {}),
    };
  }
}

function fieldOf(fields: string[], name: string): string | undefined {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}

function toEvent([id, fields]: [string, string[]]): OutboxEvent {
  return {
    id,
    type: fieldOf(fields, 'type')!,
    idempotencyKey: fieldOf(fields, 'key')!,
    payload: JSON.parse(fieldOf(fields, 'payload') ?? '{}') as Record<string, unknown>,
    createdAt: iso(fieldOf(fields, 'at'))!,
  };
}

function compareStreamIds(a: string, b: string): number {
  const [am, as] = a.split('-').map(Number) as [number, number];
  const [bm, bs] = b.split('-').map(Number) as [number, number];
  return am - bm || as - bs;
}

const msOrEmpty = (at: string | null) => (at === null ? '' : String(Date.parse(at)));

function toPool(raw: Record<string, string>): Pool {
  return {
    name: raw.name!,
    perClaimantLimit: Number(raw.limit),
    lowStockThreshold: raw.threshold === '' || raw.threshold === undefined ? null : Number(raw.threshold),
    metadata: JSON.parse(raw.metadata ?? '{}') as Record<string, unknown>,
    startsAt: iso(raw.starts),
    expiresAt: iso(raw.expires),
    maxRedemptions: raw.maxr === '' || raw.maxr === undefined ? null : Number(raw.maxr),
    maxRedemptionsPerClaimant: raw.maxrc === '' || raw.maxrc === undefined ? null : Number(raw.maxrc),
    publicCodes: raw.public === '1',
    codeFormat: raw.format ? (JSON.parse(raw.format) as CodeFormat) : null,
    createdAt: iso(raw.created_at)!,
    stats: {
      total: Number(raw.total),
      free: Number(raw.free),
      claimed: Number(raw.claimed),
      redeemed: Number(raw.redeemed),
      revoked: Number(raw.revoked),
    },
  };
}

/** A code as answered; `now` (server clock, epoch ms) reports a live hold, when given. */
function toCode(pool: string, code: string, rec: CodeRecord, now?: number): CodeInfo {
  return {
    pool,
    code,
    status: rec.s,
    claimant: rec.h ?? null,
    claimedAt: iso(rec.ca),
    redeemedAt: iso(rec.ra),
    orderId: rec.o ?? null,
    ...(rec.vs !== undefined || rec.ve !== undefined ? { startsAt: iso(rec.vs), expiresAt: iso(rec.ve) } : {}),
    ...(now !== undefined && rec.hc !== undefined && rec.hu !== undefined && rec.hu > now
      ? { hold: { claimant: rec.hc, expiresAt: iso(rec.hu)! } }
      : {}),
  };
}

/** A multi-use code: free while uses remain, redeemed when none do. */
const toMultiCode = (pool: string, code: string, m: MultiRecord, byClaimant?: number): CodeInfo =>
  multiUseCode(
    pool,
    { code, max: m.m, used: m.u, perClaimant: m.p ?? null, startsAt: iso(m.vs), expiresAt: iso(m.ve) },
    byClaimant,
  );

/** The script's answer for a code that is not a single-use code of the pool. */
const isCodeNotFound = (reply: unknown) => Array.isArray(reply) && reply[0] === 'not_found' && reply[1] === 'code';

/** I2/I4 of multi-use codes: uses counted = uses recorded ≤ max; per-claimant counts match and stay within the limit. */
function multiUseViolations(
  pool: string,
  multiRaw: Record<string, string>,
  usesRaw: Record<string, string>,
  usesByRaw: Record<string, string>,
): Violation[] {
  const violations: Violation[] = [];
  const recorded = new Map<string, number>();
  const byClaimant = new Map<string, number>();
  for (const [field, raw] of Object.entries(usesRaw)) {
    const code = field.slice(0, field.indexOf('\n'));
    recorded.set(code, (recorded.get(code) ?? 0) + 1);
    const c = (JSON.parse(raw) as { c: string }).c;
    if (c) byClaimant.set(`${code}\n${c}`, (byClaimant.get(`${code}\n${c}`) ?? 0) + 1);
  }
  for (const [code, raw] of Object.entries(multiRaw)) {
    const m = JSON.parse(raw) as MultiRecord;
    const n = recorded.get(code) ?? 0;
    if (m.u !== n || m.u > m.m)
      violations.push({
        invariant: 'I4',
        pool,
        code,
        expected: n,
        actual: m.u,
        message: `multi-use code '${code}' counts ${m.u} uses (of ${m.m}) but ${n} are recorded`,
      });
    for (const [key, count] of byClaimant) {
      if (!key.startsWith(`${code}\n`)) continue;
      const claimant = key.slice(code.length + 1);
      if (Number(usesByRaw[key] ?? 0) !== count)
        violations.push({
          invariant: 'I4',
          pool,
          code,
          claimant,
          expected: count,
          actual: Number(usesByRaw[key] ?? 0),
          message: `claimant '${claimant}' has ${count} recorded uses of '${code}' but the count says ${usesByRaw[key] ?? 0}`,
        });
      if (m.p !== undefined && count > m.p)
        violations.push({
          invariant: 'I2',
          pool,
          code,
          claimant,
          expected: m.p,
          actual: count,
          message: `claimant '${claimant}' used multi-use code '${code}' ${count} times, limit is ${m.p}`,
        });
    }
  }
  return violations;
}
