import { randomFillSync } from 'node:crypto';

/** Bytes of randomness per id: 96 bits. */
const ID_BYTES = 12;
/**
 * Ids are cut from a pool of random bytes filled 256 ids at a time: one `randomBytes(12)` per
 * id measured ~4% of a SQLite sale buy's CPU. Each byte is used once, so ids stay as random.
 */
const pool = Buffer.alloc(ID_BYTES * 256);
let offset = pool.length;

/** Unguessable, URL-safe ids with a type prefix (`hold_…`, `ord_…`, `sale_…`), 96 random bits. */
export function newId(prefix: string): string {
  if (offset + ID_BYTES > pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const id = `${prefix}_${pool.toString('hex', offset, offset + ID_BYTES)}`;
  offset += ID_BYTES;
  return id;
}

/**
 * An id like `newId`'s (the same 96 random bits) led by the creation time, 12 hex digits of
 * milliseconds, so ids made one after another sort together. For the primary keys of rows a hot
 * path inserts into an ordered index (SQLite orders and holds): random keys put each insert on a
 * page of its own, so a commit of a group of buys wrote one page per buy (and one per index that
 * ends in the key); time-led keys land on the same few pages. Measured on SQLite: ~15% less CPU
 * per buy and per reserve + confirm. The time only orders; uniqueness comes from the random part,
 * so a clock that steps back costs locality, never a collision.
 */
export function newTimeLedId(prefix: string): string {
  const random = newId(prefix).slice(prefix.length + 1);
  return `${prefix}_${Date.now().toString(16).padStart(12, '0')}${random}`;
}
