import type { z } from 'zod';
import { DibsError } from './errors.js';

/**
 * Parses `value` with `schema`; on failure throws one `invalid_input` DibsError naming the first
 * offending field (`field` prefixes the path, e.g. `claimant` or `body.perClaimantLimit`).
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, field?: string): z.output<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const path = [field, ...issue.path.map(String)].filter((p) => p !== undefined && p !== '').join('.');
  const name = path || 'input';
  const message =
    issue.code === 'unrecognized_keys'
      ? `unknown field(s) ${issue.keys.map((k) => `'${k}'`).join(', ')}`
      : issue.message;
  return fail(name, message, result.error.issues.length);
}

function fail(field: string, message: string, issues: number): never {
  throw new DibsError('invalid_input', `${field}: ${message}`, { field, details: issues > 1 ? { issues } : undefined });
}
