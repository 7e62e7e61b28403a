/**
 * CSV windows in the core importer, against a recording PoolBackend (what matters here is what
 * the parser hands to a store, not how a store writes it — the conformance suite does that):
 * parse → export → parse keeps every code and window, for any code text and any UTC offset.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Readable } from 'node:stream';
import fc from 'fast-check';
import { stringify } from 'csv-stringify/sync';
import type { PoolBackend } from '../../src/core/pools/backend.js';
import { codesToCsv } from '../../src/core/export.js';
import { importCsv } from '../../src/core/import.js';
import type { CodeInfo, ImportedCode } from '../../src/core/types.js';

/** A store that records every batch. */
function recordingBackend() {
  const stored: ImportedCode[] = [];
  const backend = {
    async insertCodes(_pool: string, codes: readonly ImportedCode[]) {
      stored.push(...codes);
      return { inserted: codes.length, duplicates: 0 };
    },
  } as unknown as PoolBackend;
  return { backend, stored };
}

async function parse(csv: string): Promise<ImportedCode[]> {
  const { backend, stored } = recordingBackend();
  await importCsv(backend, 'p', csv, { batchSize: 7 });
  return stored;
}

async function text(stream: Readable): Promise<string> {
  let out = '';
  for await (const chunk of stream) out += chunk.toString();
  return out;
}

const asCodeInfo = (entry: ImportedCode): CodeInfo => {
  const { code, startsAt = null, expiresAt = null } = typeof entry === 'string' ? { code: entry } : entry;
  return {
    pool: 'p',
    code,
    status: 'free',
    claimant: null,
    claimedAt: null,
    redeemedAt: null,
    orderId: null,
    ...(startsAt || expiresAt ? { startsAt, expiresAt } : {}),
  };
};

// codes as a user's export may hold them: commas, quotes, spaces inside, non-ASCII; never blank,
// never padded (the importer trims), no control characters
const codeArb = fc
  .string({
    minLength: 1,
    maxLength: 40,
    unit: fc.oneof(
      fc.constantFrom(...'AZaz09-_,"\' ;=@é€'.split('')),
      fc.string({ minLength: 1, maxLength: 1, unit: 'grapheme' }),
    ),
  })
  .map((s) => s.replace(/[\u0000-\u001f\u007f-\u009f]/g, 'x').trim())
  .filter((s) => s.length > 0 && s.length <= 128);
const instantArb = fc.integer({ min: Date.UTC(2000, 0, 1), max: Date.UTC(2099, 0, 1) });
/** An instant written with an offset of whole quarter hours (−10:00 … +14:00), as a promotion system might. */
const offsetArb = fc.integer({ min: -40, max: 56 }).map((q) => q * 15);
function withOffset(ms: number, offsetMinutes: number): string {
  const local = new Date(ms + offsetMinutes * 60_000).toISOString().slice(0, 23);
  const abs = Math.abs(offsetMinutes);
  return `${local}${offsetMinutes < 0 ? '-' : '+'}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
}
const rowArb = fc.record({
  code: codeArb,
  starts: fc.option(fc.tuple(instantArb, offsetArb), { nil: null }),
  length: fc.integer({ min: 1, max: 10 * 365 * 86_400_000 }),
  expires: fc.boolean(),
  expiresOffset: offsetArb,
});

describe('CSV import with windows', () => {
  it('parse → export → parse keeps every code and window (any code text, any UTC offset)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(rowArb, { selector: (r) => r.code, minLength: 1, maxLength: 30 }),
        async (rows) => {
          const expected: ImportedCode[] = rows.map(({ code, starts, length, expires }) => {
            const startsAt = starts ? new Date(starts[0]).toISOString() : null;
            const expiresAt = expires ? new Date((starts?.[0] ?? Date.UTC(2000, 0, 1)) + length).toISOString() : null;
            return startsAt === null && expiresAt === null ? code : { code, startsAt, expiresAt };
          });
          const input = stringify([
            ['code', 'starts_at', 'expires_at'],
            ...rows.map(({ code, starts, length, expires, expiresOffset }) => [
              code,
              starts ? withOffset(starts[0], starts[1]) : '',
              expires ? withOffset((starts?.[0] ?? Date.UTC(2000, 0, 1)) + length, expiresOffset) : '',
            ]),
          ]);
          const parsed = await parse(input);
          assert.deepEqual(parsed, expected, 'parsed to UTC');
          async function* batches() {
            yield parsed.map(asCodeInfo);
          }
          const exported = await text(await codesToCsv(batches(), { escapeFormulas: false }));
          assert.deepEqual(await parse(exported), parsed, 'export imports back');
        },
      ),
      { numRuns: 150 },
    );
  });

  it('reports the file line of the first bad row, also after a quoted field spanning lines', async () => {
    const { backend, stored } = recordingBackend();
    const csv =
      'code,note,expires_at\nA,"two\nlines",\nB,,2026-11-30\nC,,2026-11-30T00:00:00\nD,,2026-11-30T00:00:00Z\n';
    const result = await importCsv(backend, 'p', csv);
    assert.deepEqual(result, {
      imported: 2,
      duplicates: 0,
      invalid: 2,
      firstInvalid: {
        line: 4,
        field: 'expires_at',
        message: 'must be an ISO 8601 timestamp, e.g. 2026-11-27T09:00:00Z',
      },
    });
    assert.deepEqual(
      stored,
      ['A', { code: 'D', startsAt: null, expiresAt: '2026-11-30T00:00:00.000Z' }],
      'a date or a time without an offset is not guessed',
    );
  });
});
