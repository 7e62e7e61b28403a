/**
 * The client's transport: one logical call = one or more HTTP attempts with the same
 * Idempotency-Key, so a retry after a lost answer replays the first answer instead of acting twice.
 * Only `fetch`, `AbortSignal`, `setTimeout` and Web Crypto: it runs on Node, Deno, Bun, Workers and
 * Vercel Edge (test/client/bundle.test.ts bundles it for a neutral platform and fails on any
 * Node built-in).
 */
import { DibsError, ERROR_CODES, type ErrorCode } from '../core/errors.js';

export interface RetryOptions {
  /** Attempts per call, the first included (default 5). */
  attempts?: number;
  /** First backoff (default 100 ms); doubles each retry, full jitter, capped by `maxDelayMs`. */
  baseDelayMs?: number;
  /** Longest backoff between two attempts (default 5 000 ms); a longer Retry-After still wins, within the call's timeout. */
  maxDelayMs?: number;
}

export interface ClientOptions {
  /** Where `dibs serve` answers, e.g. `https://dibs.example.com`. */
  baseUrl: string;
  /** An API key (`dibs_…`), sent as `Authorization: Bearer …`. */
  apiKey?: string;
  /** Budget of one logical call, every retry included (default 30 000 ms). */
  timeoutMs?: number;
  retry?: RetryOptions;
  /** Another fetch (a Workers service binding, a test double); default the global one. */
  fetch?: typeof fetch;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
}

export interface CallOptions {
  /** This call's budget instead of the client's `timeoutMs`. */
  timeoutMs?: number;
  /** Cancels the call (and its retries). */
  signal?: AbortSignal;
  /** The call's Idempotency-Key; default a new random one per logical call, reused by its retries. */
  idempotencyKey?: string;
}

export interface Request {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  /** A raw text body (CSV) instead of JSON. */
  text?: { contentType: string; body: string };
  /** Answer as text (CSV export) instead of JSON. */
  asText?: boolean;
  /** The body carries the caller's own `idempotencyKey`: no header key is added. */
  keyInBody?: boolean;
  /** Extra time the server may legitimately take (a lock acquire's `waitMs`). */
  serverWaitMs?: number;
  /** Headers of this request only (a waiting-room ticket's `Dibs-Ticket`). */
  headers?: Record<string, string>;
}

const KNOWN = new Set(Object.keys(ERROR_CODES));

/** A fresh random idempotency key (Web Crypto). */
export function newIdempotencyKey(): string {
  return `dibs-client-${globalThis.crypto.randomUUID()}`;
}

export class Transport {
  private readonly baseUrl: string;
  private readonly fetch: typeof fetch;
  private readonly attempts: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly timeoutMs: number;

  constructor(private readonly options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.attempts = Math.max(1, options.retry?.attempts ?? 5);
    this.baseDelayMs = options.retry?.baseDelayMs ?? 100;
    this.maxDelayMs = options.retry?.maxDelayMs ?? 5_000;
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  async call<T>(request: Request, call: CallOptions = {}): Promise<T> {
    const budget = (call.timeoutMs ?? this.timeoutMs) + (request.serverWaitMs ?? 0);
    const deadline = Date.now() + budget;
    // Every mutating call carries a key: a retry (ours, after a 503 or a dropped connection) then
    // replays the stored answer instead of claiming, buying or acquiring a second time.
    // A caller's key carried in the body (claim, buy, reserve) is the library's own replay key and
    // covers the retries by itself; the service refuses a header key that differs from it.
    const key =
      request.method === 'GET' || request.keyInBody ? undefined : (call.idempotencyKey ?? newIdempotencyKey());
    const url = this.url(request);
    const headers: Record<string, string> = { accept: 'application/json', ...this.options.headers, ...request.headers };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    if (key !== undefined) headers['idempotency-key'] = key;
    let body: string | undefined;
    if (request.text) {
      headers['content-type'] = request.text.contentType;
      body = request.text.body;
    } else if (request.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(request.body);
    }
    for (let attempt = 1; ; attempt++) {
      if (call.signal?.aborted) throw cancelled(call.signal.reason);
      const left = deadline - Date.now();
      if (left <= 0) throw timedOut(request, budget);
      const outcome = await this.attempt(
        url,
        { method: request.method, headers, ...(body !== undefined ? { body } : {}) },
        left,
        call.signal,
      );
      if ('ok' in outcome) {
        if (request.asText) return outcome.ok as T;
        return (outcome.ok === '' ? undefined : JSON.parse(outcome.ok)) as T;
      }
      if (call.signal?.aborted) throw cancelled(call.signal.reason);
      if ('timedOut' in outcome) throw timedOut(request, budget);
      if ('final' in outcome) throw outcome.final;
      if (attempt >= this.attempts) throw outcome.retry;
      const backoff = Math.random() * Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (attempt - 1));
      const wait = Math.max(backoff, outcome.retryAfterMs ?? 0);
      if (Date.now() + wait >= deadline) throw outcome.retry;
      await sleep(wait, call.signal);
    }
  }

  /** One HTTP attempt, bounded by `timeoutMs` and the caller's signal. */
  private async attempt(
    url: string,
    init: RequestInit,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<{ ok: string } | { final: DibsError } | { retry: DibsError; retryAfterMs?: number } | { timedOut: true }> {
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), timeoutMs);
    const onAbort = () => timeout.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const res = await this.fetch(url, { ...init, signal: timeout.signal });
      const text = await res.text();
      if (res.ok) return { ok: text };
      const error = errorFrom(res.status, text);
      if (!retriable(res.status, error)) return { final: error };
      const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
      return retryAfterMs === undefined ? { retry: error } : { retry: error, retryAfterMs };
    } catch (error) {
      if (timeout.signal.aborted) return { timedOut: true };
      // fetch failed: no connection, a reset, a dropped answer. Safe to retry: the same
      // Idempotency-Key goes with it (or the call is a GET).
      return {
        retry: new DibsError('unavailable', `could not reach dibs at ${this.baseUrl}: ${(error as Error).message}`, {
          retriable: true,
          cause: error,
        }),
      };
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  private url(request: Request): string {
    const query = Object.entries(request.query ?? {})
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
    return `${this.baseUrl}${request.path}${query.length ? `?${query.join('&')}` : ''}`;
  }
}

/** `/v1/pools/${seg(name)}`: every path segment percent-encoded. */
export const seg = (value: string) => encodeURIComponent(value);

/**
 * 503 (store unavailable, instance shutting down), 429 (rate limited) and 409
 * idempotency_key_in_use (our own earlier attempt still running) are worth another attempt; every
 * other answer is final.
 */
function retriable(status: number, error: DibsError): boolean {
  return status === 503 || status === 429 || error.code === 'idempotency_key_in_use';
}

function errorFrom(status: number, text: string): DibsError {
  let shown: { code?: unknown; message?: unknown; field?: unknown; details?: unknown } | undefined;
  try {
    shown = (JSON.parse(text) as { error?: typeof shown }).error;
  } catch {
    shown = undefined;
  }
  const code: ErrorCode =
    typeof shown?.code === 'string' && KNOWN.has(shown.code) ? (shown.code as ErrorCode) : fallbackCode(status);
  const message = typeof shown?.message === 'string' ? shown.message : `HTTP ${status}: ${text.slice(0, 200)}`;
  const details =
    shown?.details && typeof shown.details === 'object' ? (shown.details as Record<string, unknown>) : undefined;
  return new DibsError(code, message, {
    ...(typeof shown?.field === 'string' ? { field: shown.field } : {}),
    ...(details ? { details } : {}),
    retriable: status === 503 || status === 429 || code === 'idempotency_key_in_use' || code === 'lock_timeout',
  });
}

/** A status without a known code (a proxy's page, a newer server): the nearest stable code. */
function fallbackCode(status: number): ErrorCode {
  if (status === 503 || status === 502 || status === 504) return 'unavailable';
  if (status === 429) return 'rate_limited';
  const byStatus = Object.entries(ERROR_CODES).find(([, s]) => s === status);
  return (byStatus?.[0] as ErrorCode | undefined) ?? 'internal';
}

/** Retry-After: delta-seconds or an HTTP date; milliseconds, or undefined. */
function parseRetryAfter(value: string | null): number | undefined {
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

function timedOut(request: Request, budget: number): DibsError {
  return new DibsError('unavailable', `${request.method} ${request.path}: no answer within ${budget} ms`, {
    retriable: true,
    details: { timeoutMs: budget },
  });
}

function cancelled(reason: unknown): DibsError {
  return new DibsError('unavailable', 'the call was cancelled', {
    retriable: false,
    cause: reason,
    details: { aborted: true },
  });
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(cancelled(signal.reason));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(cancelled(signal!.reason));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
