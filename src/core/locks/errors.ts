import { DibsError } from '../errors.js';

export const lockTimeout = (key: string, waitMs: number) =>
  new DibsError('lock_timeout', `lock '${key}' was not free within ${waitMs} ms`, {
    retriable: true,
    details: { key, waitMs },
  });

/**
 * The last attempt was granted, but the store's answer came after the lease's TTL (less its safety
 * margin) had run out, so the grant was given back: "not free" would be untrue.
 */
export const grantTooLate = (key: string, waitMs: number, ttlMs: number) =>
  new DibsError(
    'lock_timeout',
    `lock '${key}' was granted, but the store answered after the lease's ${ttlMs} ms TTL had run out (given back; waited ${waitMs} ms): retry, or use a ttlMs longer than the store takes to answer`,
    { retriable: true, details: { key, waitMs, ttlMs, grantTooLate: true } },
  );

export const leaseLost = (key: string) =>
  new DibsError('lease_lost', `lease on '${key}' expired or is held by someone else; acquire again`, {
    details: { key },
  });

export const notOwner = (key: string) =>
  new DibsError('not_owner', `this token holds no live lease on '${key}'`, { details: { key } });

export const unsupported = (what: string, backend: string) =>
  new DibsError('unsupported', `${what} are not available on the ${backend} store yet`, { details: { backend } });

export const aborted = (key: string, reason: unknown) =>
  new DibsError('lock_timeout', `waiting for '${key}' was cancelled`, {
    details: { key, aborted: true },
    cause: reason,
  });
