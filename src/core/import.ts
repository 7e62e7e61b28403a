/**
 * Streaming code import: turns a CSV byte stream or a list of strings into validated batches
 * and hands each batch to the backend, so a million codes never sit in memory at once.
 */
import { Readable } from 'node:stream';
import { Parser } from 'csv-parse';
import type { PoolBackend } from './pools/backend.js';
import { DibsError } from './errors.js';
import { csvColumns, parseCsvRow, parseListEntry, type CsvColumns, type ParsedEntry } from './import-entries.js';
import type { ImportedCode, ImportProgress, ImportResult } from './types.js';

export const DEFAULT_IMPORT_BATCH = 5000;
/** A CSV record longer than this is not a code list: refuse it instead of buffering it. */
const MAX_RECORD_BYTES = 64 * 1024;

export interface ImportOptions {
  /** Called after every batch is stored. */
  onProgress?: (progress: ImportProgress) => void;
  batchSize?: number;
}

export type CsvSource = Readable | AsyncIterable<string | Uint8Array> | string | Uint8Array;

/**
 * Imports codes from an in-memory or streamed list: each element a code, or an object
 * `{code, startsAt?, expiresAt?}` that gives the code its own validity window.
 */
export async function importCodeList(
  backend: PoolBackend,
  pool: string,
  codes: Iterable<unknown> | AsyncIterable<unknown>,
  options: ImportOptions = {},
): Promise<ImportResult> {
  const importer = new BatchImporter(backend, pool, options);
  let index = 0;
  if (Symbol.asyncIterator in codes) {
    for await (const raw of codes) if (importer.add(parseListEntry(raw), { index: index++ })) await importer.flush();
  } else {
    // A plain loop: `for await` over a sync iterable costs a promise and a microtask per code
    // (a second of a 1M-code import); the loop awaits only when a batch is handed over.
    for (const raw of codes) if (importer.add(parseListEntry(raw), { index: index++ })) await importer.flush();
  }
  return importer.finish();
}

/**
 * Imports codes from CSV text: one code per line, or several columns with a header row that
 * names a `code` column — and optionally `starts_at` / `expires_at` (or `valid_from` /
 * `valid_until`): each code's own validity window, ISO 8601 with an offset, stored in the same
 * batch write as the code. Without such a header the first column is the code.
 */
export async function importCsv(
  backend: PoolBackend,
  pool: string,
  source: CsvSource,
  options: ImportOptions = {},
): Promise<ImportResult> {
  const input =
    typeof source === 'string' || source instanceof Uint8Array ? Readable.from([source]) : Readable.from(source);
  let bytes = 0;
  input.on('data', (chunk: string | Uint8Array) => {
    bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
  });
  const parser = input.pipe(
    new LineNumberedParser({
      bom: true,
      relax_column_count: true,
      relax_quotes: true,
      skip_empty_lines: true,
      max_record_size: MAX_RECORD_BYTES,
    }),
  );
  input.on('error', (error) => parser.destroy(error));
  const importer = new BatchImporter(backend, pool, options, () => bytes);
  let columns: CsvColumns | null | undefined;
  try {
    for await (const { record, line } of parser as AsyncIterable<NumberedRecord>) {
      if (columns === undefined) {
        columns = csvColumns(record);
        if (columns !== null) continue;
      }
      if (importer.add(parseCsvRow(record, columns), { line })) await importer.flush();
    }
  } catch (error) {
    if (error instanceof DibsError) throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new DibsError('invalid_input', `CSV could not be read: ${message}`, {
      field: 'codes',
      details: { ...importer.progress() },
      cause: error,
    });
  }
  return importer.finish();
}

interface NumberedRecord {
  record: string[];
  /** The file line the record ends on (1-based). */
  line: number;
}

/**
 * Tags each record with its line, to point at the first bad row. csv-parse's own `info` option
 * builds a dozen-field object per record (3× the parse time of a 200k-row file); a record is
 * pushed synchronously while the parser's live `info.lines` is the line it ends on, so reading it
 * there costs one small object.
 */
class LineNumberedParser extends Parser {
  override push(record: unknown, encoding?: BufferEncoding): boolean {
    return super.push(
      record === null ? null : ({ record: record as string[], line: this.info.lines } satisfies NumberedRecord),
      encoding,
    );
  }
}

class BatchImporter {
  private batch: ImportedCode[] = [];
  private readonly totals: ImportResult = { imported: 0, duplicates: 0, invalid: 0 };
  private readonly batchSize: number;
  /** Batches being stored right now: up to the backend's `importConcurrency`. */
  private readonly inFlight = new Set<Promise<void>>();
  private failure: { error: unknown } | null = null;

  constructor(
    private readonly backend: PoolBackend,
    private readonly pool: string,
    private readonly options: ImportOptions,
    private readonly bytesRead?: () => number,
  ) {
    this.batchSize = options.batchSize ?? DEFAULT_IMPORT_BATCH;
  }

  /**
   * Queues a parsed entry (`at`: where it was, for the report of the first skipped one); true when
   * the batch is full and the caller must `flush()` before adding more. Synchronous, so a loop over
   * a million entries awaits once per batch, not once per entry.
   */
  add(parsed: ParsedEntry, at: { line: number } | { index: number }): boolean {
    if (!parsed.ok) {
      this.totals.invalid++;
      this.totals.firstInvalid ??= { ...at, field: parsed.field, message: parsed.message };
      return false;
    }
    this.batch.push(parsed.entry);
    return this.batch.length >= this.batchSize;
  }

  progress(): ImportProgress {
    const bytes = this.bytesRead?.();
    return { ...this.totals, ...(bytes === undefined ? {} : { bytes }) };
  }

  async finish(): Promise<ImportResult> {
    // An empty import still checks that the pool exists, so a typo is not a silent no-op.
    if (this.batch.length > 0 || (this.totals.imported + this.totals.duplicates === 0 && this.inFlight.size === 0))
      await this.flush();
    await Promise.all(this.inFlight);
    this.throwIfFailed();
    if (this.totals.imported > 0) await this.backend.importFinished?.(this.pool, this.totals.imported);
    return { ...this.totals };
  }

  /**
   * Hands the batch to the backend. Servers that write batches in parallel well (PostgreSQL: one
   * COPY per connection) get several at once; the import waits only when all slots are busy.
   */
  async flush(): Promise<void> {
    this.throwIfFailed();
    const batch = this.batch;
    this.batch = [];
    const stored = this.backend.insertCodes(this.pool, batch).then(
      ({ inserted, duplicates }) => {
        this.totals.imported += inserted;
        this.totals.duplicates += duplicates;
        this.options.onProgress?.(this.progress());
      },
      (error: unknown) => {
        this.failure ??= { error };
      },
    );
    const tracked: Promise<void> = stored.finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
    if (this.inFlight.size >= Math.max(1, this.backend.importConcurrency ?? 1)) await Promise.race(this.inFlight);
    this.throwIfFailed();
  }

  private throwIfFailed(): void {
    if (this.failure) throw this.failure.error;
  }
}
