/**
 * Lease tokens as the shells (HTTP API and CLI) hand them out. A shell's caller gives back only the
 * token, so the token of a semaphore slot carries the slot's limit — `<library token>.s<limit>` —
 * and a renewal answers the lease's own limit rather than 1. A plain lock's token is the library's
 * unchanged. The suffix grants nothing: the store checks only the library token.
 */
import { z } from 'zod';
import { DibsError } from '../core/errors.js';
import type { Lease } from '../core/locks/types.js';

const SUFFIX = /^(.+)\.s(\d{1,5})$/;
/** The library's lease token bounds (src/core/locks/schemas.ts), checked here under the caller's name for the field. */
const libraryToken = z.string().min(8).max(100);

/** The lease with its limit carried in the token when it is a semaphore slot (limit > 1). */
export function shellLease<L extends Lease>(lease: L): L {
  return lease.limit > 1 ? { ...lease, token: `${lease.token}.s${lease.limit}` } : lease;
}

/**
 * Splits a token a shell handed out into the library token and the limit it carries (none for a
 * plain lock's token or a library lease's); `field` names the input in errors (`token`, `--token`).
 */
export function parseShellToken(value: unknown, field: string): { token: string; limit?: number } {
  if (typeof value !== 'string')
    throw new DibsError('invalid_input', `${field}: required, the token of the lease`, { field });
  const match = SUFFIX.exec(value);
  const token = match ? match[1]! : value;
  const parsed = libraryToken.safeParse(token);
  if (!parsed.success)
    throw new DibsError(
      'invalid_input',
      `${field}: not a lease token (${parsed.error.issues[0]?.message ?? 'invalid'})`,
      { field },
    );
  return match ? { token, limit: Number(match[2]) } : { token };
}
