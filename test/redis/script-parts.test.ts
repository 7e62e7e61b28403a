/**
 * Trimming a Lua fragment to the functions a script calls (script-parts.ts): the fragments split
 * and join back byte for byte, a script gets what it calls and what those call (in the fragment's
 * order), loose statements stay, and a fragment that breaks the expected shape fails at load.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { usedParts } from '../../src/backends/redis/script-parts.js';

const dir = new URL('../../src/backends/redis/scripts/', import.meta.url);
const functionsOf = (source: string) => [...source.matchAll(/^local function (\w+)/gm)].map((m) => m[1]!);

describe('redis script parts', () => {
  for (const file of ['lib', 'sale_lib', 'outbox_lib']) {
    it(`${file}.lua: kept whole when a script mentions every function`, () => {
      const source = readFileSync(new URL(`${file}.lua`, dir), 'utf8');
      assert.equal(usedParts(source, functionsOf(source).join(' '), file), source);
    });
  }

  it('keeps what the script calls and, transitively, what those call, in order, with their comments', () => {
    const fragment = [
      '-- header',
      '-- about a',
      'local function a() return 1 end',
      'local function b()',
      '  return a()',
      'end',
      'local X = ARGV[1]',
      '-- about c',
      'local function c(y)',
      '  return y',
      'end',
    ].join('\n');
    assert.equal(
      usedParts(fragment, 'return b()', 'f'),
      fragment.replace('-- about c\nlocal function c(y)\n  return y\nend', '').replace(/\n$/, ''),
    );
    assert.deepEqual(functionsOf(usedParts(fragment, 'return 1', 'f')), []);
    assert.match(usedParts(fragment, 'return 1', 'f'), /local X = ARGV\[1\]/);
    // a name inside another word is not a use
    assert.deepEqual(functionsOf(usedParts(fragment, 'return ab_c()', 'f')), []);
  });

  it('the claim script gets a handful of lib.lua, not all of it', () => {
    const lib = readFileSync(new URL('lib.lua', dir), 'utf8');
    const claim = readFileSync(new URL('claim.lua', dir), 'utf8');
    const kept = functionsOf(usedParts(lib, claim, 'lib.lua'));
    assert.ok(kept.includes('now_ms') && kept.includes('put_free') && kept.includes('parked_until'));
    assert.ok(!kept.includes('next_fence') && !kept.includes('iso_ms'));
  });

  it('a function without its closing line fails loudly', () => {
    assert.throws(() => usedParts('local function a()\n  return 1\n', 'a()', 'broken.lua'), /broken\.lua: function a/);
  });
});
