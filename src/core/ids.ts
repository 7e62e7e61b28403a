import { randomBytes } from 'node:crypto';

/** Unguessable, URL-safe ids with a type prefix (`hold_…`, `ord_…`, `sale_…`), 96 random bits. */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}
