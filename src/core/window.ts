/** Validity windows (pools): open from `startsAt` (inclusive) until `expiresAt` (exclusive). */
import type { DibsError } from './errors.js';
import { refusal } from './refusals.js';

export interface ValidityWindow {
  startsAt: string | null;
  expiresAt: string | null;
}

/** Where `now` (ISO UTC, the store's clock) falls; ISO UTC strings order as text. */
export function windowState(window: ValidityWindow, now: string): 'open' | 'not_yet_valid' | 'expired' {
  if (window.startsAt !== null && now < window.startsAt) return 'not_yet_valid';
  if (window.expiresAt !== null && now >= window.expiresAt) return 'expired';
  return 'open';
}

/** Throws `not_yet_valid` (retriable: it opens later) before the window, `expired` after it. */
export function assertInWindow(pool: string, window: ValidityWindow, now: string): void {
  const state = windowState(window, now);
  if (state !== 'open') throw outsideWindow(pool, window, state);
}

/** The error for a pool whose window the store found closed. */
export function outsideWindow(pool: string, window: ValidityWindow, state: 'not_yet_valid' | 'expired'): DibsError {
  return state === 'not_yet_valid'
    ? refusal('pool_not_yet_valid', { pool, startsAt: window.startsAt })
    : refusal('pool_expired', { pool, expiresAt: window.expiresAt });
}

/** Throws `not_yet_valid` / `expired` when `now` is outside a code's own window (after the pool's). */
export function assertCodeInWindow(code: string, window: ValidityWindow, now: string): void {
  const state = windowState(window, now);
  if (state !== 'open')
    throw codeOutsideWindow(code, state, state === 'not_yet_valid' ? window.startsAt! : window.expiresAt!);
}

/** The error for a code whose own window the store found closed (`at`: its start or its end). */
export function codeOutsideWindow(code: string, state: 'not_yet_valid' | 'expired', at: string): DibsError {
  return refusal(state === 'not_yet_valid' ? 'code_not_yet_valid' : 'code_expired', { code, at });
}
