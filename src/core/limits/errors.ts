import { DibsError } from '../errors.js';

export const limitNotFound = (name: string) =>
  new DibsError('not_found', `limit '${name}' does not exist`, { details: { limit: name } });

export const limitExists = (name: string) =>
  new DibsError('already_exists', `limit '${name}' already exists`, { details: { limit: name } });

export const tooMany = (name: string, n: number, most: number) =>
  new DibsError('invalid_input', `n: ${n} can never be admitted by limit '${name}' (at most ${most} at once)`, {
    field: 'n',
    details: { limit: name, n, most },
  });

export const waitTimedOut = (name: string, key: string, waitMs: number, retryAfterMs: number) =>
  new DibsError('rate_limited', `limit '${name}' key '${key}' did not admit within ${waitMs} ms`, {
    retriable: true,
    details: { limit: name, key, waitMs, retryAfterMs },
  });

export const waitAborted = (name: string, key: string, reason: unknown) =>
  new DibsError('rate_limited', `waiting for limit '${name}' key '${key}' was cancelled`, {
    details: { limit: name, key, aborted: true },
    cause: reason,
  });
