import assert from 'node:assert/strict';
import { isDibsError, type ErrorCode } from '../../src/index.js';

/** Asserts that `promise` rejects with a DibsError of the given stable code (and field, when given). */
export async function rejectsWith(
  promise: Promise<unknown> | (() => Promise<unknown>),
  code: ErrorCode,
  field?: string,
): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(isDibsError(error), `expected a DibsError '${code}', got ${String(error)}`);
    assert.equal(error.code, code, `expected error code '${code}', got '${error.code}': ${error.message}`);
    if (field !== undefined) assert.equal(error.field, field);
    return true;
  });
}

export async function collect<T>(batches: AsyncIterable<T[]>): Promise<T[]> {
  const all: T[] = [];
  for await (const batch of batches) all.push(...batch);
  return all;
}

/** A short random suffix that keeps parallel test runs apart (schemas, key prefixes, pools). */
export function uniqueId(prefix = 't'): string {
  return `${prefix}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
}
