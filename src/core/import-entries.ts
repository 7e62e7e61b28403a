/**
 * What one import entry is: a list element (a code, or `{code, startsAt?, expiresAt?}`) or a CSV
 * row read through its header. Either becomes an `ImportedCode`, or the reason it is skipped.
 */
import type { z } from 'zod';
import { DibsError } from './errors.js';
import { windowedCodeSchema } from './pools/schemas.js';
import { codeSchema, plainCode } from './schemas.js';
import type { ImportedCode } from './types.js';

export type ParsedEntry = { ok: true; entry: ImportedCode } | { ok: false; field: string; message: string };

type WindowField = 'startsAt' | 'expiresAt';

/**
 * Header names per field, compared without case, `_`, `-` or spaces (`starts_at`, `startsAt` and
 * `Starts At` are one name). `valid_from`/`valid_until` are what promotion systems and spreadsheets
 * often call the same two instants.
 */
const HEADER_NAMES: Record<'code' | WindowField, readonly string[]> = {
  code: ['code'],
  startsAt: ['startsat', 'validfrom'],
  expiresAt: ['expiresat', 'validuntil'],
};

const headerKey = (cell: string) =>
  cell
    .trim()
    .toLowerCase()
    .replace(/[\s_-]+/g, '');

/** Where each field sits in a CSV row, and the header's own name for each (for messages). */
export interface CsvColumns {
  code: number;
  windows: { field: WindowField; index: number; name: string }[];
}

/**
 * Reads a first CSV row as a header when it names a known column; null when it is data (then the
 * first column is the code, as before window columns existed). A header that names the same field
 * twice, or window columns without a code column, is refused: guessing would import wrong windows.
 */
export function csvColumns(header: readonly string[]): CsvColumns | null {
  const found = new Map<keyof typeof HEADER_NAMES, { index: number; name: string }>();
  header.forEach((cell, index) => {
    const key = headerKey(cell);
    for (const [field, names] of Object.entries(HEADER_NAMES) as [keyof typeof HEADER_NAMES, readonly string[]][]) {
      if (!names.includes(key)) continue;
      const earlier = found.get(field);
      if (earlier)
        throw headerError(
          `columns '${earlier.name}' and '${cell.trim()}' both give the ${field === 'code' ? 'code' : field}`,
        );
      found.set(field, { index, name: cell.trim() });
    }
  });
  if (found.size === 0) return null;
  const code = found.get('code');
  if (!code)
    throw headerError(
      `the header names ${[...found.values()].map((c) => `'${c.name}'`).join(', ')} but no 'code' column`,
    );
  const windows = (['startsAt', 'expiresAt'] as const).flatMap((field) => {
    const column = found.get(field);
    return column ? [{ field, ...column }] : [];
  });
  return { code: code.index, windows };
}

/** One CSV data row through its columns; an empty window cell is open on that side. */
export function parseCsvRow(record: readonly string[], columns: CsvColumns | null): ParsedEntry {
  if (columns === null || columns.windows.length === 0) return parseCode(record[columns?.code ?? 0]);
  const raw: Record<string, string | null> = { code: record[columns.code] ?? null };
  for (const { field, index } of columns.windows) raw[field] = record[index]?.trim() || null;
  const parsed = parseWindowed(raw);
  if (parsed.ok) return parsed;
  // name the column as the file's header does, so the user finds it
  const column = columns.windows.find((w) => w.field === parsed.field);
  return { ...parsed, field: column?.name ?? parsed.field };
}

/** One list element: a code, or `{code, startsAt?, expiresAt?}`. */
export function parseListEntry(raw: unknown): ParsedEntry {
  if (typeof raw === 'object' && raw !== null && !Array.isArray(raw)) return parseWindowed(raw);
  if (typeof raw !== 'string')
    return { ok: false, field: 'code', message: 'must be a string or an object {code, startsAt?, expiresAt?}' };
  return parseCode(raw);
}

function parseCode(raw: unknown): ParsedEntry {
  if (typeof raw === 'string') {
    const code = plainCode(raw);
    if (code !== null) return { ok: true, entry: code };
  }
  const result = codeSchema.safeParse(raw);
  return result.success ? { ok: true, entry: result.data } : skipped(result.error);
}

function parseWindowed(raw: unknown): ParsedEntry {
  const result = windowedCodeSchema.safeParse(raw);
  if (!result.success) return skipped(result.error);
  const { code, startsAt, expiresAt } = result.data;
  // a code without a window stays a bare code: the stores' plain (fastest) path
  return { ok: true, entry: startsAt === null && expiresAt === null ? code : { code, startsAt, expiresAt } };
}

function skipped(error: z.ZodError): ParsedEntry {
  const issue = error.issues[0]!;
  if (issue.code === 'unrecognized_keys') return { ok: false, field: issue.keys[0]!, message: 'unknown field' };
  return {
    ok: false,
    field: issue.path.length > 0 ? issue.path.map(String).join('.') : 'code',
    message: issue.message,
  };
}

function headerError(message: string): DibsError {
  return new DibsError('invalid_input', `CSV header: ${message}`, { field: 'codes' });
}
