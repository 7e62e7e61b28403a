/** Generating codes into a SQLite pool: exact counts, collisions redrawn, space exhaustion reported. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { codeShape } from '../../src/index.js';
import { collect, rejectsWith } from '../support/assert.js';
import { sqliteForSuite } from '../support/sqlite.js';

describe('sqlite: generated codes', () => {
  const temp = sqliteForSuite();

  it('puts exactly count new codes of the pattern in, with progress', async () => {
    const { dibs } = temp;
    await dibs.pools.create({ name: 'gen' });
    const progress: number[] = [];
    const spec = { count: 2000, pattern: 'SPRING-####-####', charset: 'alphanumeric' as const, checkChar: true };
    const result = await dibs.pools.generate('gen', spec, { onProgress: (p) => progress.push(p.generated) });
    assert.equal(result.generated, 2000);
    assert.equal(progress.at(-1), 2000);
    const codes = await collect(dibs.pools.exportCodes('gen'));
    assert.equal(codes.length, 2000);
    const shape = codeShape(spec);
    assert.ok(
      codes.every((c) => shape.verify(c.code)),
      'every stored code has the shape and a valid check character',
    );
  });

  it('redraws collisions in a tight space until the count is met', async () => {
    const { dibs } = temp;
    await dibs.pools.create({ name: 'tight' });
    // 1,000 possible codes, ask for 450 twice: the second run collides often and still adds 450 new
    await dibs.pools.generate('tight', { count: 450, length: 3, charset: 'numeric' });
    const second = await dibs.pools.generate('tight', { count: 450, length: 3, charset: 'numeric' });
    assert.equal(second.generated, 450);
    assert.ok(second.collisions > 0, 'collisions were redrawn');
    assert.equal((await dibs.pools.stats('tight')).total, 900);
    // single codes are still found while the space is 10% → 5% free (each needs ~10–20 one-code
    // rounds: giving up after 20 fruitless rounds alone failed here about one time in eight)
    for (let i = 0; i < 50; i++)
      assert.equal((await dibs.pools.generate('tight', { count: 1, length: 3, charset: 'numeric' })).generated, 1);
    assert.equal((await dibs.pools.stats('tight')).total, 950);
    // now only 50 are left: a further 450 cannot be found
    await rejectsWith(dibs.pools.generate('tight', { count: 450, length: 3, charset: 'numeric' }), 'conflict', 'count');
  });

  it('refuses an infeasible request before writing anything, and unknown pools', async () => {
    const { dibs } = temp;
    await dibs.pools.create({ name: 'empty' });
    await rejectsWith(
      dibs.pools.generate('empty', { count: 600, length: 3, charset: 'numeric' }),
      'invalid_input',
      'count',
    );
    assert.equal((await dibs.pools.stats('empty')).total, 0);
    await rejectsWith(dibs.pools.generate('no-such-pool', { count: 1, length: 8 }), 'not_found');
  });
});
