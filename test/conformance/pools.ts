/**
 * The pool conformance suite: every operation and every error path of coupon pools, written
 * once and run unchanged against every backend. A backend test file calls
 * `poolConformance(label, open)` with a factory that returns a fresh, isolated Dibs.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { Dibs } from '../../src/index.js';
import { collect, rejectsWith } from '../support/assert.js';
import { importWindowCases } from './import-windows.js';

export interface ConformanceTarget {
  dibs: Dibs;
  cleanup(): Promise<void>;
  /** The store's URL, for hooks that write into the store behind dibs' back (cart-tamper.ts). */
  store?: string;
}

export function poolConformance(label: string, open: () => Promise<ConformanceTarget>): void {
  describe(`${label}: coupon pools`, () => {
    let target: ConformanceTarget;
    let dibs: Dibs;
    let n = 0;
    /** A fresh pool with `codes` imported (C1, C2, …) for one test. */
    const freshPool = async (
      options: { codes?: number; perClaimantLimit?: number; lowStockThreshold?: number | null; prefix?: string } = {},
    ) => {
      const name = `${options.prefix ?? 'pool'}-${++n}`;
      await dibs.pools.create({
        name,
        perClaimantLimit: options.perClaimantLimit ?? 1,
        lowStockThreshold: options.lowStockThreshold ?? null,
      });
      const count = options.codes ?? 0;
      if (count > 0)
        await dibs.pools.importCodes(
          name,
          Array.from({ length: count }, (_, i) => `C${i + 1}`),
        );
      return name;
    };

    before(async () => {
      target = await open();
      dibs = target.dibs;
    });
    after(async () => {
      await target?.cleanup();
    });

    describe('pool lifecycle', () => {
      it('creates a pool with defaults and zero counts', async () => {
        const pool = await dibs.pools.create({ name: 'defaults' });
        assert.equal(pool.name, 'defaults');
        assert.equal(pool.perClaimantLimit, 1);
        assert.equal(pool.lowStockThreshold, null);
        assert.deepEqual(pool.metadata, {});
        assert.ok(!Number.isNaN(Date.parse(pool.createdAt)), `createdAt is a timestamp: ${pool.createdAt}`);
        assert.deepEqual(pool.stats, { total: 0, free: 0, claimed: 0, redeemed: 0, revoked: 0 });
      });

      it('keeps limit, threshold and metadata', async () => {
        await dibs.pools.create({
          name: 'configured',
          perClaimantLimit: 3,
          lowStockThreshold: 10,
          metadata: { campaign: 'spring', discount: 15 },
        });
        const pool = await dibs.pools.get('configured');
        assert.equal(pool.perClaimantLimit, 3);
        assert.equal(pool.lowStockThreshold, 10);
        assert.deepEqual(pool.metadata, { campaign: 'spring', discount: 15 });
      });

      it('refuses a second pool with the same name', async () => {
        await dibs.pools.create({ name: 'twice' });
        await rejectsWith(dibs.pools.create({ name: 'twice' }), 'already_exists');
      });

      it('refuses malformed pool specs with the field named', async () => {
        await rejectsWith(dibs.pools.create({ name: '' }), 'invalid_input', 'name');
        await rejectsWith(dibs.pools.create({ name: 'has space' }), 'invalid_input', 'name');
        await rejectsWith(dibs.pools.create({ name: 'x'.repeat(65) }), 'invalid_input', 'name');
        await rejectsWith(dibs.pools.create({ name: 'ok', perClaimantLimit: 0 }), 'invalid_input', 'perClaimantLimit');
        await rejectsWith(
          dibs.pools.create({ name: 'ok', perClaimantLimit: 1.5 }),
          'invalid_input',
          'perClaimantLimit',
        );
        await rejectsWith(
          dibs.pools.create({ name: 'ok', lowStockThreshold: -1 }),
          'invalid_input',
          'lowStockThreshold',
        );
        await rejectsWith(dibs.pools.create({ name: 'ok', colour: 'red' } as never), 'invalid_input');
        await rejectsWith(dibs.pools.get('ok'), 'not_found');
      });

      it('answers not_found for an unknown pool on every operation', async () => {
        await rejectsWith(dibs.pools.get('nope'), 'not_found');
        await rejectsWith(dibs.pools.stats('nope'), 'not_found');
        await rejectsWith(dibs.pools.claim('nope', 'alice'), 'not_found');
        await rejectsWith(dibs.pools.claimMany('nope', 'alice', 2), 'not_found');
        await rejectsWith(dibs.pools.importCodes('nope', ['A']), 'not_found');
        await rejectsWith(dibs.pools.importCodes('nope', []), 'not_found');
        await rejectsWith(dibs.pools.release('nope', 'A'), 'not_found');
        await rejectsWith(dibs.pools.redeem('nope', 'A'), 'not_found');
        await rejectsWith(dibs.pools.revoke('nope', 'A'), 'not_found');
        await rejectsWith(dibs.pools.code('nope', 'A'), 'not_found');
        await rejectsWith(dibs.pools.holdings('nope', 'alice'), 'not_found');
        await rejectsWith(dibs.pools.audit('nope'), 'not_found');
        await rejectsWith(dibs.pools.update('nope', { perClaimantLimit: 2 }), 'not_found');
        await rejectsWith(dibs.pools.delete('nope'), 'not_found');
        await rejectsWith(collect(dibs.pools.exportCodes('nope')), 'not_found');
        await rejectsWith(dibs.pools.exportCsv('nope'), 'not_found');
      });

      it('lists pools by name with a cursor', async () => {
        for (const name of ['zzzz-list-b', 'zzzz-list-a', 'zzzz-list-c']) await dibs.pools.create({ name });
        const first = await dibs.pools.list({ limit: 2, after: 'zzzz-list-' });
        assert.deepEqual(
          first.items.map((p) => p.name),
          ['zzzz-list-a', 'zzzz-list-b'],
        );
        assert.equal(first.nextCursor, 'zzzz-list-b');
        const second = await dibs.pools.list({ limit: 2, after: first.nextCursor! });
        assert.deepEqual(
          second.items.map((p) => p.name),
          ['zzzz-list-c'],
        );
        assert.equal(second.nextCursor, null);
        assert.ok(second.items[0]!.stats, 'listed pools carry stats');
        const all = await dibs.pools.list();
        assert.ok(all.items.some((p) => p.name === 'zzzz-list-a'));
      });

      it('updates limit, threshold and metadata', async () => {
        const name = await freshPool({ codes: 5 });
        const updated = await dibs.pools.update(name, {
          perClaimantLimit: 4,
          lowStockThreshold: 2,
          metadata: { v: 2 },
        });
        assert.equal(updated.perClaimantLimit, 4);
        assert.equal(updated.lowStockThreshold, 2);
        assert.deepEqual(updated.metadata, { v: 2 });
        assert.equal(updated.stats.total, 5);
        const cleared = await dibs.pools.update(name, { lowStockThreshold: null });
        assert.equal(cleared.lowStockThreshold, null);
        assert.equal(cleared.perClaimantLimit, 4, 'fields not in the patch are kept');
      });

      it('refuses to lower the limit below what a claimant already holds', async () => {
        const name = await freshPool({ codes: 5, perClaimantLimit: 3 });
        await dibs.pools.claimMany(name, 'alice', 3);
        await rejectsWith(dibs.pools.update(name, { perClaimantLimit: 2 }), 'conflict', 'perClaimantLimit');
        assert.equal((await dibs.pools.update(name, { perClaimantLimit: 3 })).perClaimantLimit, 3);
        await dibs.pools.release(name, (await dibs.pools.holdings(name, 'alice'))[0]!.code);
        assert.equal((await dibs.pools.update(name, { perClaimantLimit: 2 })).perClaimantLimit, 2);
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('deletes a pool with its codes', async () => {
        const name = await freshPool({ codes: 3 });
        await dibs.pools.claim(name, 'alice', { idempotencyKey: 'k' });
        await dibs.pools.delete(name);
        await rejectsWith(dibs.pools.get(name), 'not_found');
        await rejectsWith(dibs.pools.delete(name), 'not_found');
        await dibs.pools.create({ name });
        assert.equal((await dibs.pools.stats(name)).total, 0, 'a re-created pool starts empty');
        await dibs.pools.importCodes(name, ['C1']);
        const again = await dibs.pools.claim(name, 'alice', { idempotencyKey: 'k' });
        assert.equal(again.replayed, false, 'idempotency keys die with their pool');
      });
    });

    describe('import', () => {
      it('counts imported, duplicate and invalid entries of a list', async () => {
        const name = await freshPool();
        const result = await dibs.pools.importCodes(name, [
          'A',
          'B',
          ' C ',
          'A',
          '',
          '   ',
          'x'.repeat(129),
          'x'.repeat(128),
          42,
          null,
          'B',
          'bad\u0000code',
        ]);
        assert.deepEqual(result, {
          imported: 4,
          duplicates: 2,
          invalid: 6,
          firstInvalid: { index: 4, field: 'code', message: 'must not be blank' },
        });
        assert.deepEqual(await dibs.pools.stats(name), { total: 4, free: 4, claimed: 0, redeemed: 0, revoked: 0 });
        assert.equal((await dibs.pools.code(name, 'C')).status, 'free', 'codes are trimmed');
      });

      it('dedupes against codes already in the pool (refill)', async () => {
        const name = await freshPool({ codes: 3 });
        const result = await dibs.pools.importCodes(name, ['C2', 'C3', 'C4', 'C5']);
        assert.deepEqual(result, { imported: 2, duplicates: 2, invalid: 0 });
        assert.equal((await dibs.pools.stats(name)).total, 5);
      });

      it('reads CSV: plain lines, a header, several columns, BOM, CRLF and quotes', async () => {
        const plain = await freshPool();
        assert.deepEqual(await dibs.pools.importCsv(plain, 'P1\nP2\n\nP3\n'), {
          imported: 3,
          duplicates: 0,
          invalid: 0,
        });
        const header = await freshPool();
        assert.deepEqual(await dibs.pools.importCsv(header, '\uFEFFcode\r\nH1\r\nH2\r\nH1\r\n'), {
          imported: 2,
          duplicates: 1,
          invalid: 0,
        });
        const columns = await freshPool();
        const csv = 'id,Code,note\n1,K1,first\n2,"K,2","quoted, with comma"\n3,,empty\n';
        assert.deepEqual(await dibs.pools.importCsv(columns, csv), {
          imported: 2,
          duplicates: 0,
          invalid: 1,
          firstInvalid: { line: 4, field: 'code', message: 'must not be blank' },
        });
        assert.equal((await dibs.pools.code(columns, 'K,2')).code, 'K,2');
      });

      it('streams a large CSV in batches and reports progress', async () => {
        const name = await freshPool();
        const total = 20_000;
        async function* chunks() {
          for (let i = 0; i < total; i += 1000) {
            yield Buffer.from(`${Array.from({ length: 1000 }, (_, j) => `BULK-${i + j}`).join('\n')}\n`);
          }
        }
        const progress: number[] = [];
        const result = await dibs.pools.importCsv(name, chunks(), {
          onProgress: (p) => progress.push(p.imported + p.duplicates),
        });
        assert.deepEqual(result, { imported: total, duplicates: 0, invalid: 0 });
        assert.ok(progress.length >= 2, `progress reported per batch (${progress.length} reports)`);
        assert.equal(progress.at(-1), total);
        assert.deepEqual(await dibs.pools.stats(name), { total, free: total, claimed: 0, redeemed: 0, revoked: 0 });
      });

      it('refuses a CSV whose record is not a code list', async () => {
        const name = await freshPool();
        await rejectsWith(dibs.pools.importCsv(name, `A\n${'x'.repeat(100_000)}\n`), 'invalid_input');
      });

      importWindowCases(() => dibs, freshPool);
    });

    describe('claim', () => {
      it('gives each claimant its own code and answers already-held on a repeat', async () => {
        const name = await freshPool({ codes: 3 });
        const alice = await dibs.pools.claim(name, 'alice');
        assert.equal(alice.status, 'claimed');
        assert.equal(alice.claimant, 'alice');
        assert.equal(alice.pool, name);
        assert.equal(alice.replayed, false);
        assert.deepEqual(alice.held, [alice.code]);
        const bob = await dibs.pools.claim(name, 'bob');
        assert.notEqual(bob.code, alice.code);
        const again = await dibs.pools.claim(name, 'alice');
        assert.equal(again.status, 'already-held');
        assert.equal(again.code, alice.code);
        assert.deepEqual(again.held, [alice.code]);
        assert.deepEqual(await dibs.pools.stats(name), { total: 3, free: 1, claimed: 2, redeemed: 0, revoked: 0 });
      });

      it('answers sold_out when no code is free, and already-held still works', async () => {
        const name = await freshPool({ codes: 1 });
        const alice = await dibs.pools.claim(name, 'alice');
        await rejectsWith(dibs.pools.claim(name, 'bob'), 'sold_out');
        await rejectsWith(dibs.pools.claim(name, 'bob', { idempotencyKey: 'bob-1' }), 'sold_out');
        assert.equal((await dibs.pools.claim(name, 'alice')).code, alice.code);
        const empty = await freshPool();
        await rejectsWith(dibs.pools.claim(empty, 'carol'), 'sold_out');
      });

      it('replays an idempotency key with the original code', async () => {
        const name = await freshPool({ codes: 5, perClaimantLimit: 2 });
        const first = await dibs.pools.claim(name, 'alice', { idempotencyKey: 'order-1' });
        const retry = await dibs.pools.claim(name, 'alice', { idempotencyKey: 'order-1' });
        assert.equal(retry.status, 'claimed');
        assert.equal(retry.code, first.code);
        assert.equal(retry.replayed, true);
        const second = await dibs.pools.claim(name, 'alice', { idempotencyKey: 'order-2' });
        assert.notEqual(second.code, first.code, 'a new key under the limit claims a new code');
        assert.equal((await dibs.pools.claim(name, 'alice', { idempotencyKey: 'order-1' })).code, first.code);
        assert.equal((await dibs.pools.stats(name)).claimed, 2);
      });

      it('refuses an idempotency key reused by another claimant or for another count', async () => {
        const name = await freshPool({ codes: 5, perClaimantLimit: 3 });
        await dibs.pools.claim(name, 'alice', { idempotencyKey: 'shared' });
        await rejectsWith(dibs.pools.claim(name, 'bob', { idempotencyKey: 'shared' }), 'conflict', 'idempotencyKey');
        await rejectsWith(
          dibs.pools.claimMany(name, 'alice', 2, { idempotencyKey: 'shared' }),
          'conflict',
          'idempotencyKey',
        );
        assert.equal((await dibs.pools.stats(name)).claimed, 1);
      });

      it('forgets a key whose code was released, so a later call claims afresh', async () => {
        const name = await freshPool({ codes: 2 });
        const first = await dibs.pools.claim(name, 'alice', { idempotencyKey: 'k' });
        await dibs.pools.release(name, first.code);
        const later = await dibs.pools.claim(name, 'alice', { idempotencyKey: 'k' });
        assert.equal(later.status, 'claimed');
        assert.equal(later.replayed, false);
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('keys are scoped to their pool', async () => {
        const a = await freshPool({ codes: 1 });
        const b = await freshPool({ codes: 1 });
        const fromA = await dibs.pools.claim(a, 'alice', { idempotencyKey: 'same' });
        const fromB = await dibs.pools.claim(b, 'alice', { idempotencyKey: 'same' });
        assert.equal(fromB.replayed, false);
        assert.equal(fromA.code, 'C1');
        assert.equal(fromB.code, 'C1');
      });

      it('enforces a per-claimant limit above one', async () => {
        const name = await freshPool({ codes: 10, perClaimantLimit: 3 });
        const codes = new Set<string>();
        for (let i = 0; i < 3; i++) {
          const r = await dibs.pools.claim(name, 'alice');
          assert.equal(r.status, 'claimed');
          codes.add(r.code);
        }
        assert.equal(codes.size, 3);
        const fourth = await dibs.pools.claim(name, 'alice');
        assert.equal(fourth.status, 'already-held');
        assert.deepEqual(new Set(fourth.held), codes);
        assert.ok(codes.has(fourth.code));
        assert.equal((await dibs.pools.stats(name)).claimed, 3);
      });

      it('claimMany takes up to the remaining limit, then answers already-held', async () => {
        const name = await freshPool({ codes: 10, perClaimantLimit: 3 });
        const two = await dibs.pools.claimMany(name, 'alice', 2);
        assert.equal(two.status, 'claimed');
        assert.equal(two.codes.length, 2);
        const more = await dibs.pools.claimMany(name, 'alice', 2);
        assert.equal(more.codes.length, 1, 'bounded by the limit');
        assert.equal(more.held.length, 3);
        const none = await dibs.pools.claimMany(name, 'alice', 1);
        assert.equal(none.status, 'already-held');
        assert.deepEqual(none.codes, []);
        assert.equal(none.held.length, 3);
        await rejectsWith(dibs.pools.claimMany(name, 'bob', 0), 'invalid_input', 'count');
        await rejectsWith(dibs.pools.claimMany(name, 'bob', 1001), 'invalid_input', 'count');
      });

      it('claimMany takes what is left when stock is short, and replays by key', async () => {
        const name = await freshPool({ codes: 2, perClaimantLimit: 5 });
        const result = await dibs.pools.claimMany(name, 'alice', 4, { idempotencyKey: 'bulk' });
        assert.equal(result.codes.length, 2);
        const replay = await dibs.pools.claimMany(name, 'alice', 4, { idempotencyKey: 'bulk' });
        assert.equal(replay.replayed, true);
        assert.deepEqual([...replay.codes].sort(), [...result.codes].sort());
        await rejectsWith(dibs.pools.claimMany(name, 'alice', 1), 'sold_out');
      });

      it('validates claimants and keys', async () => {
        const name = await freshPool({ codes: 1 });
        await rejectsWith(dibs.pools.claim(name, ''), 'invalid_input', 'claimant');
        await rejectsWith(dibs.pools.claim(name, '   '), 'invalid_input', 'claimant');
        await rejectsWith(dibs.pools.claim(name, 'a'.repeat(257)), 'invalid_input', 'claimant');
        await rejectsWith(dibs.pools.claim(name, 'tab\there'), 'invalid_input', 'claimant');
        await rejectsWith(dibs.pools.claim(name, 'alice', { idempotencyKey: '' }), 'invalid_input', 'idempotencyKey');
        await rejectsWith(
          dibs.pools.claim(name, 'alice', { idempotencyKey: 'k'.repeat(256) }),
          'invalid_input',
          'idempotencyKey',
        );
        assert.equal((await dibs.pools.stats(name)).free, 1, 'nothing was taken by a refused call');
      });

      it('treats claimants as opaque strings (unicode, punctuation, quotes)', async () => {
        const name = await freshPool({ codes: 3 });
        const odd = ["o'brien@example.com", 'Zoë 🎟️', '{tag}:"quoted"'];
        const got = await Promise.all(odd.map((c) => dibs.pools.claim(name, c)));
        assert.equal(new Set(got.map((g) => g.code)).size, 3);
        for (const c of odd) assert.equal((await dibs.pools.holdings(name, c)).length, 1);
      });

      it('serves concurrent claims from one process exactly once', async () => {
        const name = await freshPool({ codes: 100 });
        const claimants = Array.from({ length: 150 }, (_, i) => `u${i}`);
        const attempts = [...claimants, ...claimants.slice(0, 50)];
        const settled = await Promise.allSettled(attempts.map((c) => dibs.pools.claim(name, c)));
        const holders = new Map<string, string>();
        for (const s of settled) {
          if (s.status === 'rejected') {
            assert.equal((s.reason as { code?: string }).code, 'sold_out', String(s.reason));
            continue;
          }
          const previous = holders.get(s.value.code);
          assert.ok(
            previous === undefined || previous === s.value.claimant,
            `code ${s.value.code} given to ${previous} and ${s.value.claimant}`,
          );
          holders.set(s.value.code, s.value.claimant);
        }
        assert.equal(holders.size, 100);
        assert.deepEqual(await dibs.pools.stats(name), { total: 100, free: 0, claimed: 100, redeemed: 0, revoked: 0 });
        assert.deepEqual(await dibs.pools.audit(name), []);
      });
    });

    describe('release, redeem, revoke', () => {
      it('release puts a claimed code back into the pool', async () => {
        const name = await freshPool({ codes: 1 });
        const { code } = await dibs.pools.claim(name, 'alice');
        const released = await dibs.pools.release(name, code, { claimant: 'alice' });
        assert.equal(released.status, 'free');
        assert.equal(released.claimant, null);
        assert.deepEqual(await dibs.pools.stats(name), { total: 1, free: 1, claimed: 0, redeemed: 0, revoked: 0 });
        assert.equal((await dibs.pools.claim(name, 'bob')).code, code);
      });

      it('release refuses a free code, another holder, a redeemed code and an unknown code', async () => {
        const name = await freshPool({ codes: 3 });
        const { code } = await dibs.pools.claim(name, 'alice');
        await rejectsWith(dibs.pools.release(name, code, { claimant: 'bob' }), 'conflict', 'claimant');
        const free = (await collect(dibs.pools.exportCodes(name, { status: 'free' })))[0]!.code;
        await rejectsWith(dibs.pools.release(name, free), 'conflict');
        await dibs.pools.redeem(name, code);
        await rejectsWith(dibs.pools.release(name, code), 'conflict');
        await rejectsWith(dibs.pools.release(name, 'NOPE'), 'not_found');
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('redeem marks a held code used exactly once; it still counts toward the limit', async () => {
        const name = await freshPool({ codes: 3 });
        const { code } = await dibs.pools.claim(name, 'alice');
        const redeemed = await dibs.pools.redeem(name, code, { claimant: 'alice' });
        assert.equal(redeemed.status, 'redeemed');
        assert.equal(redeemed.claimant, 'alice');
        assert.ok(redeemed.redeemedAt && !Number.isNaN(Date.parse(redeemed.redeemedAt)));
        await rejectsWith(dibs.pools.redeem(name, code), 'already_redeemed');
        const again = await dibs.pools.claim(name, 'alice');
        assert.equal(again.status, 'already-held');
        assert.equal(again.code, code);
        assert.deepEqual(await dibs.pools.stats(name), { total: 3, free: 2, claimed: 0, redeemed: 1, revoked: 0 });
      });

      it('redeem refuses a free code and another holder', async () => {
        const name = await freshPool({ codes: 2 });
        const { code } = await dibs.pools.claim(name, 'alice');
        await rejectsWith(dibs.pools.redeem(name, code, { claimant: 'bob' }), 'conflict', 'claimant');
        const free = (await collect(dibs.pools.exportCodes(name, { status: 'free' })))[0]!.code;
        await rejectsWith(dibs.pools.redeem(name, free), 'conflict');
        await rejectsWith(dibs.pools.redeem(name, 'NOPE'), 'not_found');
      });

      it('revoke withdraws free and held codes for good', async () => {
        const name = await freshPool({ codes: 3 });
        const { code } = await dibs.pools.claim(name, 'alice');
        const revoked = await dibs.pools.revoke(name, code);
        assert.equal(revoked.status, 'revoked');
        assert.equal(revoked.claimant, null);
        await rejectsWith(dibs.pools.revoke(name, code), 'conflict');
        const free = (await collect(dibs.pools.exportCodes(name, { status: 'free' })))[0]!.code;
        await dibs.pools.revoke(name, free);
        assert.deepEqual(await dibs.pools.stats(name), { total: 3, free: 1, claimed: 0, redeemed: 0, revoked: 2 });
        const fresh = await dibs.pools.claim(name, 'alice');
        assert.equal(fresh.status, 'claimed', 'a claimant whose code was revoked may claim again');
        assert.ok(![code, free].includes(fresh.code), 'revoked codes are never handed out');
        await rejectsWith(dibs.pools.claim(name, 'bob'), 'sold_out');
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it("reports a code and a claimant's holdings", async () => {
        const name = await freshPool({ codes: 4, perClaimantLimit: 2 });
        const [a, b] = (await dibs.pools.claimMany(name, 'alice', 2)).codes;
        const info = await dibs.pools.code(name, a!);
        assert.equal(info.status, 'claimed');
        assert.equal(info.claimant, 'alice');
        assert.equal(info.pool, name);
        assert.ok(info.claimedAt && !Number.isNaN(Date.parse(info.claimedAt)));
        assert.equal(info.redeemedAt, null);
        const holdings = await dibs.pools.holdings(name, 'alice');
        assert.deepEqual(holdings.map((h) => h.code).sort(), [a, b].sort());
        assert.deepEqual(await dibs.pools.holdings(name, 'nobody'), []);
        await rejectsWith(dibs.pools.code(name, 'NOPE'), 'not_found');
      });
    });

    describe('checkout: validate, redeem for an order, unredeem', () => {
      it('validate answers whether and why, and changes nothing', async () => {
        const name = await freshPool({ codes: 3 });
        const { code } = await dibs.pools.claim(name, 'alice');
        const free = (await collect(dibs.pools.exportCodes(name, { status: 'free' })))[0]!.code;
        assert.deepEqual(await dibs.pools.validate(name, code, { claimant: 'alice' }), {
          valid: true,
          code: await dibs.pools.code(name, code),
        });
        assert.equal((await dibs.pools.validate(name, code)).valid, true);
        const other = await dibs.pools.validate(name, code, { claimant: 'bob' });
        assert.equal(other.valid === false && other.reason, 'other_holder');
        const unclaimed = await dibs.pools.validate(name, free);
        assert.equal(unclaimed.valid === false && unclaimed.reason, 'not_claimed');
        assert.deepEqual(await dibs.pools.validate(name, 'NOPE'), { valid: false, reason: 'not_found', code: null });
        await rejectsWith(dibs.pools.validate('no-such-pool', code), 'not_found');
        await dibs.pools.redeem(name, code, { orderId: 'order-1' });
        const used = await dibs.pools.validate(name, code);
        assert.equal(used.valid === false && used.reason, 'already_redeemed');
        await dibs.pools.revoke(name, free);
        const gone = await dibs.pools.validate(name, free);
        assert.equal(gone.valid === false && gone.reason, 'revoked');
        assert.deepEqual(await dibs.pools.stats(name), { total: 3, free: 1, claimed: 0, redeemed: 1, revoked: 1 });
      });

      it('a pool of generated codes catches a mistyped code before the lookup (malformed)', async () => {
        const name = `format-${++n}`;
        await dibs.pools.create({ name });
        await dibs.pools.generate(name, {
          count: 20,
          pattern: 'GIFT-####-####',
          charset: 'alphanumeric',
          checkChar: true,
        });
        const pool = await dibs.pools.get(name);
        assert.deepEqual(pool.codeFormat, {
          pattern: 'GIFT-####-####',
          charset: 'alphanumeric',
          prefix: '',
          suffix: '',
          checkChar: true,
        });
        const { code } = await dibs.pools.claim(name, 'alice');
        assert.equal((await dibs.pools.validate(name, code!, { claimant: 'alice' })).valid, true);
        // one character changed: the check character no longer fits
        const at = 5;
        const other = code![at] === 'A' ? 'B' : 'A';
        const typo = code!.slice(0, at) + other + code!.slice(at + 1);
        assert.deepEqual(await dibs.pools.validate(name, typo), { valid: false, reason: 'malformed', code: null });
        assert.deepEqual(await dibs.pools.validate(name, 'GIFT-12'), { valid: false, reason: 'malformed', code: null });
        await rejectsWith(
          dibs.pools.create({ name: `format-${++n}`, codeFormat: { pattern: 'NO-PLACEHOLDER' } }),
          'invalid_input',
          'pattern',
        );
      });

      it('redeem for an order is idempotent per order; another order is already_redeemed', async () => {
        const name = await freshPool({ codes: 2 });
        const { code } = await dibs.pools.claim(name, 'alice');
        const first = await dibs.pools.redeem(name, code, { claimant: 'alice', orderId: 'order-7' });
        assert.equal(first.status, 'redeemed');
        assert.equal(first.orderId, 'order-7');
        // a retried checkout gets the same answer, nothing moves
        assert.deepEqual(await dibs.pools.redeem(name, code, { claimant: 'alice', orderId: 'order-7' }), first);
        await rejectsWith(dibs.pools.redeem(name, code, { orderId: 'order-8' }), 'already_redeemed');
        await rejectsWith(dibs.pools.redeem(name, code), 'already_redeemed');
        await rejectsWith(dibs.pools.redeem(name, code, { orderId: 'bad\u0000id' }), 'invalid_input', 'orderId');
        assert.equal((await dibs.pools.code(name, code)).orderId, 'order-7');
        assert.deepEqual(await dibs.pools.stats(name), { total: 2, free: 1, claimed: 0, redeemed: 1, revoked: 0 });
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('unredeem gives the code back to its holder, records the refund, and can be redeemed again', async () => {
        const name = await freshPool({ codes: 2 });
        const { code } = await dibs.pools.claim(name, 'alice');
        await rejectsWith(dibs.pools.unredeem(name, code), 'conflict', 'code');
        await dibs.pools.redeem(name, code, { orderId: 'order-1' });
        await rejectsWith(dibs.pools.unredeem(name, code, { orderId: 'order-2' }), 'conflict', 'orderId');
        const back = await dibs.pools.unredeem(name, code, { orderId: 'order-1' });
        assert.equal(back.status, 'claimed');
        assert.equal(back.claimant, 'alice');
        assert.equal(back.redeemedAt, null);
        assert.equal(back.orderId, null);
        assert.deepEqual(await dibs.pools.stats(name), { total: 2, free: 1, claimed: 1, redeemed: 0, revoked: 0 });
        const refunds = (await dibs.pools.events({ pool: name })).filter((e) => e.type === 'code.unredeemed');
        assert.equal(refunds.length, 1);
        assert.equal(refunds[0]!.payload.code, code);
        assert.equal(refunds[0]!.payload.claimant, 'alice');
        assert.equal(refunds[0]!.payload.orderId, 'order-1');
        assert.ok(!Number.isNaN(Date.parse(refunds[0]!.payload.redeemedAt as string)));
        // the holder still holds it (it counts toward the limit) and may redeem it for a new order
        assert.equal((await dibs.pools.claim(name, 'alice')).status, 'already-held');
        const again = await dibs.pools.redeem(name, code, { orderId: 'order-2' });
        assert.equal(again.orderId, 'order-2');
        await dibs.pools.unredeem(name, code);
        assert.equal(
          (await dibs.pools.events({ pool: name })).filter((e) => e.type === 'code.unredeemed').length,
          2,
          'each refund is its own event',
        );
        await rejectsWith(dibs.pools.unredeem(name, 'NOPE'), 'not_found');
        assert.deepEqual(await dibs.pools.audit(name), []);
      });
    });

    describe('validity windows', () => {
      const at = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();
      const windowed = async (window: { startsAt?: string; expiresAt?: string }) => {
        const name = `window-${++n}`;
        const pool = await dibs.pools.create({ name, ...window });
        await dibs.pools.importCodes(name, ['W1', 'W2', 'W3', 'W4']);
        return { name, pool };
      };

      /**
       * Runs `steps` in a fresh pool whose window ends (or starts) `leadMs` from now, and again with a
       * window twice as long (up to 4 times) when they did not all end inside it: everything before
       * the test's sleep must happen inside the window, and a loaded machine (the Firestore emulator
       * in CI) can take longer than 4 s for a create, an import and two claims.
       */
      const inTime = async <T>(
        window: (leadMs: number) => { startsAt?: string; expiresAt?: string },
        steps: (name: string) => Promise<T>,
      ) => {
        for (let leadMs = 4000; ; leadMs *= 2) {
          const { name, pool } = await windowed(window(leadMs));
          const edge = Date.parse((window(0).startsAt ? pool.startsAt : pool.expiresAt)!);
          const done = await steps(name).then(
            (value) => ({ value }),
            (error: unknown) => ({ error }),
          );
          if (Date.now() < edge || leadMs >= 32_000) {
            if ('error' in done) throw done.error;
            return { name, pool, ...done.value };
          }
          console.log(`# the window's first ${leadMs} ms passed before its steps were done: once more, longer`);
        }
      };

      it('hands out and redeems only until expiresAt; a replayed key still answers; validate says expired', async () => {
        const { name, pool, kept, held } = await inTime(
          (lead) => ({ expiresAt: at(lead) }),
          async (name) => {
            const kept = await dibs.pools.claim(name, 'alice', { idempotencyKey: 'k-1' });
            const held = await dibs.pools.claim(name, 'bob');
            assert.equal((await dibs.pools.validate(name, held.code!)).valid, true);
            return { kept, held };
          },
        );
        assert.equal(pool.expiresAt, new Date(pool.expiresAt!).toISOString(), 'stored as ISO UTC');
        assert.equal(pool.startsAt, null);
        await sleep(new Date(pool.expiresAt!).getTime() - Date.now() + 400);
        await rejectsWith(dibs.pools.claim(name, 'carol'), 'expired');
        await rejectsWith(dibs.pools.claim(name, 'bob'), 'expired');
        const replay = await dibs.pools.claim(name, 'alice', { idempotencyKey: 'k-1' });
        assert.equal(replay.code, kept.code);
        assert.equal(replay.replayed, true);
        await rejectsWith(dibs.pools.redeem(name, held.code!, { orderId: 'o-1' }), 'expired');
        const check = await dibs.pools.validate(name, held.code!);
        assert.equal(check.valid === false && check.reason, 'expired');
        // moving the window re-opens it
        const reopened = await dibs.pools.update(name, { expiresAt: null });
        assert.equal(reopened.expiresAt, null);
        assert.equal((await dibs.pools.redeem(name, held.code!, { orderId: 'o-1' })).status, 'redeemed');
        assert.equal((await dibs.pools.claim(name, 'carol')).status, 'claimed');
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('refuses before startsAt (not_yet_valid) and opens at it', async () => {
        const { name, pool } = await inTime(
          (lead) => ({ startsAt: at(lead), expiresAt: at(3_600_000) }),
          async (name) => {
            await rejectsWith(dibs.pools.claim(name, 'early'), 'not_yet_valid');
            assert.deepEqual(await dibs.pools.stats(name), {
              total: 4,
              free: 4,
              claimed: 0,
              redeemed: 0,
              revoked: 0,
            });
          },
        );
        await sleep(new Date(pool.startsAt!).getTime() - Date.now() + 400);
        assert.equal((await dibs.pools.claim(name, 'early')).status, 'claimed');
      });

      it('a window that ends before it starts is bad input', async () => {
        await rejectsWith(
          dibs.pools.create({ name: `window-${++n}`, startsAt: at(60_000), expiresAt: at(1000) }),
          'invalid_input',
          'expiresAt',
        );
        await rejectsWith(
          dibs.pools.create({ name: `window-${++n}`, expiresAt: 'tomorrow' }),
          'invalid_input',
          'expiresAt',
        );
        const { name } = await windowed({});
        await rejectsWith(
          dibs.pools.update(name, { startsAt: at(60_000), expiresAt: at(0) }),
          'invalid_input',
          'expiresAt',
        );
      });
    });

    describe('redemption limits', () => {
      it('maxRedemptions caps the pool, maxRedemptionsPerClaimant each claimant; refunds free room', async () => {
        const name = `limits-${++n}`;
        const pool = await dibs.pools.create({
          name,
          perClaimantLimit: 3,
          maxRedemptions: 3,
          maxRedemptionsPerClaimant: 2,
        });
        assert.deepEqual([pool.maxRedemptions, pool.maxRedemptionsPerClaimant], [3, 2]);
        await dibs.pools.importCodes(name, ['L1', 'L2', 'L3', 'L4', 'L5', 'L6']);
        const alice = (await dibs.pools.claimMany(name, 'alice', 3)).codes;
        const bob = (await dibs.pools.claimMany(name, 'bob', 3)).codes;
        await dibs.pools.redeem(name, alice[0]!);
        await dibs.pools.redeem(name, alice[1]!);
        const told = await dibs.pools.validate(name, alice[2]!);
        assert.equal(told.valid === false && told.reason, 'limit_reached', 'validate foresees the limit');
        await rejectsWith(dibs.pools.redeem(name, alice[2]!), 'limit_reached', 'maxRedemptionsPerClaimant');
        await dibs.pools.redeem(name, bob[0]!);
        await rejectsWith(dibs.pools.redeem(name, bob[1]!), 'limit_reached', 'maxRedemptions');
        assert.equal((await dibs.pools.stats(name)).redeemed, 3);
        // a refund gives the room back
        await dibs.pools.unredeem(name, alice[0]!);
        assert.equal((await dibs.pools.redeem(name, bob[1]!)).status, 'redeemed');
        // limits can be lifted
        const lifted = await dibs.pools.update(name, { maxRedemptions: null });
        assert.equal(lifted.maxRedemptions, null);
        assert.equal((await dibs.pools.redeem(name, alice[2]!)).status, 'redeemed');
        await rejectsWith(
          dibs.pools.create({ name: `limits-${++n}`, maxRedemptionsPerClaimant: 0 }),
          'invalid_input',
          'maxRedemptionsPerClaimant',
        );
        assert.deepEqual(await dibs.pools.audit(name), []);
      });
    });

    describe('public codes', () => {
      it('a never-claimed code of a public pool is redeemed directly; its redeemer becomes its holder', async () => {
        const name = `public-${++n}`;
        const pool = await dibs.pools.create({ name, perClaimantLimit: 1, publicCodes: true, lowStockThreshold: 1 });
        assert.equal(pool.publicCodes, true);
        await dibs.pools.importCodes(name, ['PUB-1', 'PUB-2', 'PUB-3']);
        await rejectsWith(dibs.pools.redeem(name, 'PUB-1'), 'invalid_input', 'claimant');
        assert.equal(
          (await dibs.pools.validate(name, 'PUB-1', { claimant: 'walk-in' })).valid,
          true,
          'a public code is valid before anyone claimed it',
        );
        const used = await dibs.pools.redeem(name, 'PUB-1', { claimant: 'walk-in', orderId: 'till-7' });
        assert.deepEqual([used.status, used.claimant, used.orderId], ['redeemed', 'walk-in', 'till-7']);
        assert.ok(used.claimedAt && used.redeemedAt);
        assert.deepEqual(
          (await dibs.pools.holdings(name, 'walk-in')).map((h) => h.code),
          ['PUB-1'],
        );
        // the redeemer's limit counts: one code per claimant here
        const full = await dibs.pools.validate(name, 'PUB-2', { claimant: 'walk-in' });
        assert.equal(full.valid === false && full.reason, 'limit_reached');
        await rejectsWith(
          dibs.pools.redeem(name, 'PUB-2', { claimant: 'walk-in' }),
          'limit_reached',
          'perClaimantLimit',
        );
        assert.equal((await dibs.pools.claim(name, 'walk-in')).status, 'already-held');
        await dibs.pools.redeem(name, 'PUB-2', { claimant: 'second' });
        assert.deepEqual(await dibs.pools.stats(name), { total: 3, free: 1, claimed: 0, redeemed: 2, revoked: 0 });
        assert.equal(
          (await dibs.pools.events({ pool: name })).filter((e) => e.type === 'pool.low_stock').length,
          1,
          'free dropping to the threshold is noticed',
        );
        // not public: a free code cannot be redeemed
        const closed = await dibs.pools.update(name, { publicCodes: false });
        assert.equal(closed.publicCodes, false);
        await rejectsWith(dibs.pools.redeem(name, 'PUB-3', { claimant: 'third' }), 'conflict');
        assert.deepEqual(await dibs.pools.audit(name), []);
      });
    });

    describe('stats, export, audit, events', () => {
      it('keeps total = free + claimed + redeemed + revoked through every move', async () => {
        const name = await freshPool({ codes: 10, perClaimantLimit: 2 });
        const a = await dibs.pools.claimMany(name, 'alice', 2);
        const b = await dibs.pools.claim(name, 'bob');
        await dibs.pools.redeem(name, a.codes[0]!);
        await dibs.pools.release(name, a.codes[1]!);
        await dibs.pools.revoke(name, b.code);
        await dibs.pools.importCodes(name, ['C1', 'EXTRA']);
        const stats = await dibs.pools.stats(name);
        assert.deepEqual(stats, { total: 11, free: 9, claimed: 0, redeemed: 1, revoked: 1 });
        assert.deepEqual((await dibs.pools.get(name)).stats, stats);
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('exports every code with status and holder, filterable by status', async () => {
        const name = await freshPool({ codes: 5 });
        const { code } = await dibs.pools.claim(name, 'alice');
        const all = await collect(dibs.pools.exportCodes(name, { batchSize: 2 }));
        assert.equal(all.length, 5);
        assert.deepEqual(all.map((c) => c.code).sort(), ['C1', 'C2', 'C3', 'C4', 'C5']);
        const claimed = await collect(dibs.pools.exportCodes(name, { status: 'claimed' }));
        assert.deepEqual(
          claimed.map((c) => [c.code, c.claimant]),
          [[code, 'alice']],
        );
        assert.equal((await collect(dibs.pools.exportCodes(name, { status: 'free' }))).length, 4);
        await rejectsWith(
          collect(dibs.pools.exportCodes(name, { status: 'lost' as never })),
          'invalid_input',
          'status',
        );
      });

      it('exports CSV with a header and formula cells escaped', async () => {
        const name = await freshPool();
        await dibs.pools.importCodes(name, ['=HYPERLINK("x")', 'PLAIN']);
        await dibs.pools.claim(name, '@attacker');
        const text = async (stream: NodeJS.ReadableStream) => {
          let out = '';
          for await (const chunk of stream) out += chunk.toString();
          return out;
        };
        const csv = await text(await dibs.pools.exportCsv(name));
        const lines = csv.trim().split('\n');
        assert.equal(lines[0], 'code,status,claimant,claimed_at,redeemed_at,starts_at,expires_at');
        assert.equal(lines.length, 3);
        assert.ok(csv.includes(`"'=HYPERLINK(""x"")"`), csv);
        assert.ok(csv.includes(`'@attacker`), csv);
        const raw = await text(await dibs.pools.exportCsv(name, { escapeFormulas: false }));
        assert.ok(raw.includes('"=HYPERLINK(""x"")"'), raw);
      });

      it('records one low-stock event per crossing of the threshold, re-armed by a refill', async () => {
        const name = await freshPool({ codes: 4, lowStockThreshold: 2, prefix: 'low' });
        const lowStock = async () =>
          (await dibs.pools.events({ pool: name, limit: 100 })).filter((e) => e.type === 'pool.low_stock');
        await dibs.pools.claim(name, 'a');
        assert.equal((await lowStock()).length, 0, 'free 3 > threshold 2');
        await dibs.pools.claim(name, 'b');
        const [first] = await lowStock();
        assert.ok(first, 'free 2 reached the threshold');
        assert.deepEqual(first.payload, { pool: name, free: 2, threshold: 2, crossing: 1 });
        assert.ok(first.idempotencyKey.length > 0);
        assert.ok(!Number.isNaN(Date.parse(first.createdAt)));
        await dibs.pools.claim(name, 'c');
        assert.equal((await lowStock()).length, 1, 'still below: no second event');
        await dibs.pools.importCodes(name, ['R1', 'R2', 'R3']);
        assert.equal((await lowStock()).length, 1, 'a refill does not fire');
        await dibs.pools.claim(name, 'd');
        await dibs.pools.claim(name, 'e');
        const events = await lowStock();
        assert.equal(events.length, 2, 'the refill re-armed the alert and the next crossing fired');
        assert.equal(events[1]!.payload.crossing, 2);
        assert.notEqual(events[0]!.idempotencyKey, events[1]!.idempotencyKey);
        const after = await dibs.pools.events({ pool: name, after: events[0]!.id, limit: 10 });
        assert.deepEqual(
          after.map((e) => e.id),
          [events[1]!.id],
        );
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('starts a fresh event history when a deleted pool is re-created', async () => {
        const name = await freshPool({ codes: 2, lowStockThreshold: 1, prefix: 'low' });
        await dibs.pools.claim(name, 'a');
        assert.equal((await dibs.pools.events({ pool: name })).length, 1);
        await dibs.pools.delete(name);
        assert.equal((await dibs.pools.events({ pool: name })).length, 0, 'events of a deleted pool go with it');
        await dibs.pools.create({ name, lowStockThreshold: 1 });
        await dibs.pools.importCodes(name, ['X', 'Y']);
        await dibs.pools.claim(name, 'a');
        const events = await dibs.pools.events({ pool: name });
        assert.equal(events.length, 1, 'the re-created pool records its own crossing');
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('fires low stock when a pool starts at or below its threshold', async () => {
        const name = await freshPool({ codes: 3, lowStockThreshold: 5, prefix: 'low' });
        await dibs.pools.claim(name, 'a');
        await dibs.pools.claim(name, 'b');
        const events = (await dibs.pools.events({ pool: name })).filter((e) => e.type === 'pool.low_stock');
        assert.equal(events.length, 1);
        assert.equal(events[0]!.payload.free, 2);
      });

      it('audits a clean pool as clean after every kind of operation', async () => {
        const name = await freshPool({ codes: 20, perClaimantLimit: 2, lowStockThreshold: 15 });
        for (let i = 0; i < 8; i++) await dibs.pools.claim(name, `c${i % 5}`, { idempotencyKey: `k${i}` });
        const held = await collect(dibs.pools.exportCodes(name, { status: 'claimed' }));
        await dibs.pools.redeem(name, held[0]!.code);
        await dibs.pools.release(name, held[1]!.code);
        await dibs.pools.revoke(name, held[2]!.code);
        assert.deepEqual(await dibs.pools.audit(name), []);
      });
    });
  });
}
