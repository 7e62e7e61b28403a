import { DibsError } from '../errors.js';

export const lockTimeout = (key: string, waitMs: number) =>
  new DibsError('lock_timeout', `lock '${key}' was not free within ${waitMs} ms`, {
    retriable: true,
    details: { key, waitMs },
  });

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
