/**
 * Inside one import batch, codes get their ids — hence their export order — in the order of the
 * input, not in the order they are written (sorted by code, import-codes.ts): the client numbers
 * each staged row, and the ids are drawn in that order. Checked on the plain path (all codes new)
 * and on the path that skips codes the pool already has, with a code repeated in the batch kept at
 * its first place.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Dibs } from '../../src/index.js';
import { collect } from '../support/assert.js';
import { openTempPg, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();

/** Codes whose input order is far from their sorted order (a fixed shuffle, so a failure repeats). */
function shuffled(prefix: string, n: number): string[] {
  const codes = Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(5, '0')}`);
  let seed = 12345;
  for (let i = codes.length - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const j = seed % (i + 1);
    [codes[i], codes[j]] = [codes[j]!, codes[i]!];
  }
  return codes;
}

describe('postgres: an import batch keeps its input order in the export', { skip }, () => {
  let dibs: Dibs;
  let cleanup: () => Promise<void>;
  before(async () => {
    ({ dibs, cleanup } = await openTempPg());
  });
  after(async () => {
    await cleanup?.();
  });

  const exported = async (pool: string) => (await collect(dibs.pools.exportCodes(pool))).map((c) => c.code);

  it('all codes new: export order is input order', async () => {
    await dibs.pools.create({ name: 'fresh' });
    const codes = shuffled('F', 3000);
    assert.deepEqual(await dibs.pools.importCodes('fresh', codes), { imported: 3000, duplicates: 0, invalid: 0 });
    assert.deepEqual(await exported('fresh'), codes);
  });

  it('codes already in the pool and repeated in the batch: the new ones keep input order', async () => {
    await dibs.pools.create({ name: 'mixed' });
    assert.equal((await dibs.pools.importCodes('mixed', ['M-00007', 'M-02000'])).imported, 2);
    const codes = shuffled('M', 3000);
    const batch = [...codes.slice(0, 1500), codes[10]!, ...codes.slice(1500)];
    assert.deepEqual(await dibs.pools.importCodes('mixed', batch), { imported: 2998, duplicates: 3, invalid: 0 });
    const expected = ['M-00007', 'M-02000', ...codes.filter((c) => c !== 'M-00007' && c !== 'M-02000')];
    assert.deepEqual(await exported('mixed'), expected);
  });
});
