/**
 * The batch importer against a scripted PoolBackend (a core unit test: what matters here is how
 * batches are scheduled, not how a store writes them).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PoolBackend } from '../../src/core/pools/backend.js';
import { importCodeList } from '../../src/core/import.js';

function scriptedBackend(importConcurrency: number, failOnBatch?: number) {
  let inFlight = 0;
  const seen = { maxInFlight: 0, batches: 0, codes: new Set<string>() };
  const backend = {
    importConcurrency,
    async insertCodes(_pool: string, codes: readonly string[]) {
      const batch = ++seen.batches;
      inFlight++;
      seen.maxInFlight = Math.max(seen.maxInFlight, inFlight);
      try {
        await sleep(5 + (batch % 3) * 3);
        if (batch === failOnBatch) throw new Error(`batch ${batch} failed`);
        let inserted = 0;
        for (const code of codes) if (!seen.codes.has(code)) seen.codes.add(code), inserted++;
        return { inserted, duplicates: codes.length - inserted };
      } finally {
        inFlight--;
      }
    },
  } as unknown as PoolBackend;
  return { backend, seen };
}

describe('batch importer', () => {
  it('keeps up to importConcurrency batches in flight and adds every batch up', async () => {
    const { backend, seen } = scriptedBackend(3);
    const codes = Array.from({ length: 1050 }, (_, i) => `C${i % 1000}`);
    const progress: number[] = [];
    const result = await importCodeList(backend, 'p', codes, {
      batchSize: 100,
      onProgress: (p) => progress.push(p.imported + p.duplicates),
    });
    assert.deepEqual(result, { imported: 1000, duplicates: 50, invalid: 0 });
    assert.equal(seen.maxInFlight, 3);
    assert.equal(seen.batches, 11);
    assert.equal(progress.length, 11);
    assert.equal(progress.at(-1), 1050);
  });

  it('writes one batch at a time by default', async () => {
    const { backend, seen } = scriptedBackend(1);
    await importCodeList(
      backend,
      'p',
      Array.from({ length: 500 }, (_, i) => `C${i}`),
      { batchSize: 100 },
    );
    assert.equal(seen.maxInFlight, 1);
  });

  it('rejects with the first failed batch and stops reading', async () => {
    const { backend, seen } = scriptedBackend(3, 4);
    await assert.rejects(
      importCodeList(
        backend,
        'p',
        Array.from({ length: 5000 }, (_, i) => `C${i}`),
        { batchSize: 100 },
      ),
      /batch 4 failed/,
    );
    assert.ok(seen.batches < 50, `stopped early (${seen.batches} batches started)`);
  });
});
