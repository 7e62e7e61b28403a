import { Readable } from 'node:stream';
import type { CodeInfo } from './types.js';

/**
 * The window columns are always there (empty for a code without its own window), so the header
 * never depends on the data, and the file imports back with each code's window (see import.ts).
 */
export const EXPORT_COLUMNS = [
  'code',
  'status',
  'claimant',
  'claimed_at',
  'redeemed_at',
  'starts_at',
  'expires_at',
] as const;

/**
 * A spreadsheet treats a cell starting with = + - @ (or tab / CR) as a formula. Exported
 * codes and claimant ids come from outside, so such cells are prefixed with a quote
 * (OWASP "CSV injection"); `escapeFormulas: false` turns that off for machine consumers.
 */
export function escapeFormula(cell: string): string {
  return /^[=+\-@\t\r]/.test(cell) ? `'${cell}` : cell;
}

/** csv-stringify loads on the first export, not with dibs. */
export async function codesToCsv(
  batches: AsyncIterable<CodeInfo[]>,
  options: { escapeFormulas?: boolean } = {},
): Promise<Readable> {
  const { stringify } = await import('csv-stringify');
  const escapeCell = options.escapeFormulas === false ? (s: string) => s : escapeFormula;
  async function* rows() {
    for await (const batch of batches) {
      for (const c of batch) {
        yield [
          escapeCell(c.code),
          c.status,
          c.claimant === null ? '' : escapeCell(c.claimant),
          c.claimedAt ?? '',
          c.redeemedAt ?? '',
          c.startsAt ?? '',
          c.expiresAt ?? '',
        ];
      }
    }
  }
  return Readable.from(rows()).pipe(stringify({ header: true, columns: [...EXPORT_COLUMNS] }));
}
