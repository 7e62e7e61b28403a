/**
 * Import with per-code validity windows (CSV `starts_at`/`expires_at` columns, JSON objects), part
 * of the pool conformance suite: on every store each code is claimable exactly
 * inside its window.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { it } from 'node:test';
import type { Dibs } from '../../src/index.js';
import { collect, rejectsWith } from '../support/assert.js';

type FreshPool = (options?: { perClaimantLimit?: number; prefix?: string }) => Promise<string>;

export function importWindowCases(dibsOf: () => Dibs, freshPool: FreshPool): void {
  /** The store's clock shifted by `ms`: windows are judged by it, not by this process's clock. */
  const storeTime = async (ms = 0) => new Date(Date.parse(await dibsOf().backend.pools.clock()) + ms).toISOString();
  const hour = 3_600_000;

  it('imports each CSV row with its own window: claims take only codes inside theirs; bad dates skip only their row', async () => {
    const dibs = dibsOf();
    const name = await freshPool({ perClaimantLimit: 10, prefix: 'win' });
    const [past, soon, later] = await Promise.all([storeTime(-hour), storeTime(hour), storeTime(2 * hour)]);
    const csv = [
      'code,starts_at,expires_at',
      `FUTURE,${soon},`, // line 2: not yet valid
      `GONE,${past},${await storeTime(-1000)}`, // line 3: expired
      `NOW,${past},${later}`, // line 4: inside its window
      'PLAIN,,', // line 5: no window, as today
      'BAD-DATE,2026-13-45,', // line 6: skipped, reported
      `BAD-ORDER,${later},${soon}`, // line 7: ends before it starts
      `NOW,,`, // line 8: a duplicate keeps the first row's window
    ].join('\n');
    const result = await dibs.pools.importCsv(name, csv);
    assert.deepEqual(result, {
      imported: 4,
      duplicates: 1,
      invalid: 2,
      firstInvalid: {
        line: 6,
        field: 'starts_at',
        message: 'must be an ISO 8601 timestamp, e.g. 2026-11-27T09:00:00Z',
      },
    });
    assert.equal((await dibs.pools.code(name, 'FUTURE')).startsAt, soon);
    assert.equal((await dibs.pools.code(name, 'NOW')).expiresAt, later, 'the first occurrence wins');
    assert.equal((await dibs.pools.code(name, 'PLAIN')).startsAt ?? null, null);
    const claimed = await dibs.pools.claimMany(name, 'alice', 10);
    assert.deepEqual([...claimed.codes].sort(), ['NOW', 'PLAIN'], 'only codes inside their window are handed out');
    await rejectsWith(dibs.pools.claim(name, 'bob'), 'sold_out');
    assert.deepEqual(await dibs.pools.stats(name), { total: 4, free: 2, claimed: 2, redeemed: 0, revoked: 0 });
    assert.deepEqual(await dibs.pools.audit(name), []);
  });

  it('reads valid_from/valid_until (any case, spaces or dashes) and refuses an ambiguous header before writing', async () => {
    const dibs = dibsOf();
    const name = await freshPool({ prefix: 'win' });
    await rejectsWith(dibs.pools.importCsv(name, 'code,starts_at,Valid From\nA,,\n'), 'invalid_input', 'codes');
    await rejectsWith(dibs.pools.importCsv(name, 'coupon,expires_at\nA,\n'), 'invalid_input', 'codes');
    assert.equal((await dibs.pools.stats(name)).total, 0);
    const expires = await storeTime(-1000);
    const result = await dibs.pools.importCsv(name, `n,CODE,Valid From,valid-until\n1,OLD,,${expires}\n2,OK,,\n`);
    assert.deepEqual(result, { imported: 2, duplicates: 0, invalid: 0 });
    assert.equal((await dibs.pools.code(name, 'OLD')).expiresAt, expires);
    assert.equal((await dibs.pools.claim(name, 'alice')).code, 'OK');
  });

  it('takes {code, startsAt?, expiresAt?} objects beside strings in a list; a bad entry is counted and reported by index', async () => {
    const dibs = dibsOf();
    const name = await freshPool({ perClaimantLimit: 10, prefix: 'win' });
    const soon = await storeTime(hour);
    const entries = [
      'J1',
      { code: 'J2' },
      { code: 'J3', startsAt: 'soon' },
      { code: 'J4', expiresAt: null, extra: 1 },
      42,
      { code: 'J5', startsAt: soon },
    ];
    const result = await dibs.pools.importCodes(name, entries);
    assert.deepEqual(result, {
      imported: 3,
      duplicates: 0,
      invalid: 3,
      firstInvalid: {
        index: 2,
        field: 'startsAt',
        message: 'must be an ISO 8601 timestamp, e.g. 2026-11-27T09:00:00Z',
      },
    });
    assert.equal((await dibs.pools.code(name, 'J5')).startsAt, soon);
    assert.deepEqual([...(await dibs.pools.claimMany(name, 'alice', 10)).codes].sort(), ['J1', 'J2']);
  });

  it('a code imported before its window opens is handed out once the store clock reaches it', async () => {
    const dibs = dibsOf();
    const name = await freshPool({ prefix: 'win' });
    const opens = await storeTime(1200);
    await dibs.pools.importCsv(name, `code,starts_at\nLATE,${opens}\n`);
    await rejectsWith(dibs.pools.claim(name, 'early'), 'sold_out');
    for (let i = 0; i < 200 && (await storeTime()) <= opens; i++) await sleep(50);
    assert.equal((await dibs.pools.claim(name, 'punctual')).code, 'LATE');
    assert.deepEqual(await dibs.pools.audit(name), []);
  });

  it('streams a 5,000-row CSV with windows in batches; export carries the windows and imports back', async () => {
    const dibs = dibsOf();
    const name = await freshPool({ perClaimantLimit: 1000, prefix: 'win' });
    const [past, recent, later] = await Promise.all([storeTime(-2 * hour), storeTime(-hour), storeTime(hour)]);
    const total = 5000;
    // even rows open now, odd rows expired an hour ago
    const rows = Array.from({ length: total }, (_, i) =>
      i % 2 === 0 ? `W-${i},${past},${later}` : `W-${i},${past},${recent}`,
    );
    const result = await dibs.pools.importCsv(name, `code,starts_at,expires_at\n${rows.join('\n')}\n`);
    assert.deepEqual(result, { imported: total, duplicates: 0, invalid: 0 });
    const claimed = await dibs.pools.claimMany(name, 'bulk', 1000);
    assert.equal(claimed.codes.length, 1000);
    assert.ok(
      claimed.codes.every((c) => Number(c.slice(2)) % 2 === 0),
      'no expired code was handed out',
    );
    const exported = await collect(dibs.pools.exportCodes(name));
    assert.equal(exported.filter((c) => c.expiresAt === recent).length, total / 2);
    // export → import into a fresh pool keeps every window
    let csv = '';
    for await (const chunk of await dibs.pools.exportCsv(name)) csv += chunk.toString();
    const copy = await freshPool({ prefix: 'win' });
    assert.deepEqual(await dibs.pools.importCsv(copy, csv), { imported: total, duplicates: 0, invalid: 0 });
    const copied = new Map(
      (await collect(dibs.pools.exportCodes(copy))).map((c) => [c.code, [c.startsAt, c.expiresAt]]),
    );
    for (const c of exported) assert.deepEqual(copied.get(c.code), [c.startsAt, c.expiresAt], c.code);
    assert.deepEqual(await dibs.pools.audit(name), []);
  });
}
