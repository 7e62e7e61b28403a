/** The code generator: property tests (fast-check) of shape, uniqueness and the check character. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { CHARSETS, codeShape, generateInto, luhnCheck } from '../../src/core/generate.js';
import { isDibsError } from '../../src/core/errors.js';

const charsetArb = fc.oneof(
  fc.constantFrom<keyof typeof CHARSETS>('numeric', 'alpha', 'alphanumeric'),
  fc
    .uniqueArray(fc.constantFrom(...'abcdefghijkmnpqrstuvwxyz23456789!$%'.split('')), { minLength: 2, maxLength: 20 })
    .map((a) => a.join('')),
);
const patternArb = fc
  .array(fc.oneof(fc.constant('#'), fc.constantFrom('-', '_', 'X', '.')), { minLength: 1, maxLength: 16 })
  .filter((p) => p.includes('#'))
  .map((p) => p.join(''));

describe('code generator', () => {
  it('every code matches its pattern, prefix, suffix and charset, and verifies', () => {
    fc.assert(
      fc.property(
        patternArb,
        charsetArb,
        fc.boolean(),
        fc.string({ maxLength: 5 }).filter((s) => !s.includes('#')),
        (pattern, charset, checkChar, prefix) => {
          const shape = codeShape({ count: 1, pattern, charset, checkChar, prefix, suffix: '-Z' });
          for (const code of shape.generate(20)) {
            assert.ok(code.startsWith(prefix) && code.endsWith('-Z'), code);
            const middle = code.slice(prefix.length, code.length - 2);
            assert.equal(middle.length, pattern.length + (checkChar ? 1 : 0));
            for (let i = 0; i < pattern.length; i++) {
              if (pattern[i] === '#') assert.ok(shape.chars.includes(middle[i]!), `${middle[i]} in ${shape.chars}`);
              else assert.equal(middle[i], pattern[i]);
            }
            assert.ok(shape.verify(code), `verifies: ${code}`);
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('the check character catches every single-character substitution', () => {
    fc.assert(
      fc.property(charsetArb, fc.integer({ min: 1, max: 12 }), (charset, length) => {
        const shape = codeShape({ count: 1, length, charset, checkChar: true });
        const [code] = shape.generate(1);
        // substitute every position (random part and check char) with every other charset character
        for (let i = 0; i < code!.length; i++) {
          for (const c of shape.chars) {
            if (c === code![i]) continue;
            const typo = code!.slice(0, i) + c + code!.slice(i + 1);
            assert.equal(shape.verify(typo), false, `${code} → ${typo} must be caught`);
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('Luhn mod N: for every N, changing any one value changes the check value', () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 2, max: 64 })
          .chain((N) =>
            fc.tuple(
              fc.constant(N),
              fc.array(fc.integer({ min: 0, max: N - 1 }), { minLength: 1, maxLength: 12 }),
              fc.nat(),
              fc.integer({ min: 1, max: N - 1 }),
            ),
          ),
        ([N, values, at, delta]) => {
          const check = luhnCheck(values, N);
          assert.ok(check >= 0 && check < N);
          const i = at % values.length;
          const typo = values.map((v, k) => (k === i ? (v + delta) % N : v));
          assert.notEqual(luhnCheck(typo, N), check, `N=${N} ${values} → ${typo}`);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('draws are unique in practice and uniform over the charset', () => {
    const shape = codeShape({ count: 1, length: 10, charset: 'alphanumeric' });
    const codes = shape.generate(100_000);
    assert.equal(new Set(codes).size, codes.length, 'no collision among 100k draws of a 31^10 space');
    const counts = new Map<string, number>();
    for (const code of codes) for (const c of code) counts.set(c, (counts.get(c) ?? 0) + 1);
    const expected = (codes.length * 10) / shape.chars.length;
    for (const [c, n] of counts)
      assert.ok(Math.abs(n - expected) / expected < 0.05, `${c}: ${n} vs ${expected} (no modulo bias)`);
    assert.equal(counts.size, shape.chars.length);
  });

  it('generateInto fills a pool with exactly `count` unique codes, even in small spaces with codes already there', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('numeric', 'alpha'),
        fc.integer({ min: 2, max: 3 }),
        fc.boolean(),
        fc.double({ min: 0.05, max: 0.5, noNaN: true }),
        fc.double({ min: 0, max: 0.2, noNaN: true }),
        async (charset, length, checkChar, fill, preFill) => {
          const shape = codeShape({ count: 1, length, charset, checkChar });
          const space = shape.chars.length ** length;
          const pool = new Set<string>(shape.generate(Math.floor(space * preFill))); // codes already in the pool
          const before = pool.size;
          const count = Math.max(1, Math.floor(space * fill) - before);
          // the pool dedupes like every store does: a code already there is a duplicate
          const sink = async (codes: string[]) => {
            let imported = 0;
            for (const code of codes) if (!pool.has(code)) pool.add(code), imported++;
            return { imported, duplicates: codes.length - imported };
          };
          const result = await generateInto(sink, { count, length, charset, checkChar });
          assert.equal(result.generated, count);
          assert.equal(pool.size, before + count, 'every generated code is new and unique');
          for (const code of pool) assert.ok(shape.verify(code), code);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('an infeasible request is refused before anything is written', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 1000 }), async (length, extra) => {
        const space = 10 ** length;
        let writes = 0;
        const sink = async (codes: string[]) => ((writes += codes.length), { imported: codes.length, duplicates: 0 });
        await assert.rejects(
          generateInto(sink, { count: Math.floor(space / 2) + extra, length, charset: 'numeric' }),
          (e: unknown) => isDibsError(e, 'invalid_input') && e.field === 'count',
        );
        assert.equal(writes, 0);
      }),
      { numRuns: 100 },
    );
  });

  it('look-alikes are left out of the named charsets', () => {
    for (const c of ['0', 'O', '1', 'I', 'L']) assert.ok(!CHARSETS.alphanumeric.includes(c), c);
    for (const c of ['O', 'I', 'L']) assert.ok(!CHARSETS.alpha.includes(c), c);
  });

  it('refuses infeasible and malformed specs, naming the field', () => {
    const fails = (spec: Record<string, unknown>, field: string) => {
      try {
        codeShape(spec as never).assertFeasible((spec.count as number) ?? 1);
        assert.fail(`accepted ${JSON.stringify(spec)}`);
      } catch (error) {
        assert.ok(isDibsError(error) && error.code === 'invalid_input', String(error));
        assert.equal(error.field, field, error.message);
      }
    };
    fails({ count: 51, length: 2, charset: 'numeric' }, 'count'); // 100 codes possible, 50 allowed
    fails({ count: 10, length: 4, pattern: '##' }, 'pattern');
    fails({ count: 10 }, 'pattern');
    fails({ count: 10, pattern: 'NOPE' }, 'pattern');
    fails({ count: 10, length: 4, charset: 'aab' }, 'charset');
    fails({ count: 0, length: 4 }, 'count');
    codeShape({ count: 50, length: 2, charset: 'numeric' }).assertFeasible(50); // exactly half is fine
  });
});
