/**
 * Typed errors with stable codes. Callers (HTTP, CLI, scripts) branch on `code`, never on
 * message text. Every backend maps its own failure statuses onto these codes.
 */
export const ERROR_CODES = {
  invalid_input: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  already_exists: 409,
  sold_out: 409,
  limit_reached: 409,
  already_redeemed: 409,
  /** A code held by another checkout (`pools.hold`) until its hold expires or is released. */
  held: 409,
  not_yet_valid: 409,
  expired: 409,
  not_live: 409,
  hold_expired: 409,
  lock_timeout: 409,
  lease_lost: 409,
  not_owner: 409,
  ticket_required: 403,
  invalid_ticket: 403,
  not_admitted: 409,
  /** An Idempotency-Key reused with a different request (method, path or body). */
  idempotency_key_reused: 409,
  /** A request with the same Idempotency-Key is still being processed. */
  idempotency_key_in_use: 409,
  unsupported: 501,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  unavailable: 503,
  internal: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface DibsErrorOptions {
  /** The input field the error is about, when there is one (e.g. `claimant`). */
  field?: string;
  /** True when the same call may succeed if retried (connection loss, busy store). */
  retriable?: boolean;
  details?: Record<string, unknown>;
  cause?: unknown;
}

export class DibsError extends Error {
  override readonly name = 'DibsError';
  readonly code: ErrorCode;
  readonly field: string | undefined;
  readonly retriable: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: DibsErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.field = options.field;
    this.retriable = options.retriable ?? code === 'unavailable';
    this.details = options.details;
  }

  /** The HTTP status this error maps to. */
  get status(): number {
    return ERROR_CODES[this.code];
  }

  toJSON(): { code: ErrorCode; message: string; field?: string; details?: Record<string, unknown> } {
    return {
      code: this.code,
      message: this.message,
      ...(this.field ? { field: this.field } : {}),
      ...(this.details ? { details: this.details } : {}),
    };
  }
}

export function isDibsError(error: unknown, code?: ErrorCode): error is DibsError {
  return error instanceof DibsError && (code === undefined || error.code === code);
}

export const notFound = (what: string, id: string) =>
  new DibsError('not_found', `${what} '${id}' does not exist`, { details: { [what]: id } });

export const invalidInput = (field: string, message: string) =>
  new DibsError('invalid_input', `${field}: ${message}`, { field });

export const unavailable = (message: string, cause?: unknown) =>
  new DibsError('unavailable', message, { retriable: true, cause });
