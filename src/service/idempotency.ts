/**
 * `Idempotency-Key` on every mutating /v1 route, with Stripe's semantics:
 * - first request with a key runs, and its answer (any status below 500) is stored for `ttlMs`;
 * - the same key with the same request (method, path, body) gets the stored answer again, with
 *   `Idempotent-Replayed: true`;
 * - the same key with a different request → 409 `idempotency_key_reused`;
 * - the same key while the first request is still running → 409 `idempotency_key_in_use`.
 * A 5xx answer is not stored (the key is released), so the client may retry. Keys are scoped to
 * the API key that sent them. Records live in the store's ServiceStore, so every instance sees them.
 * Streamed CSV imports are fingerprinted by method, path, content type and length (the body
 * is streamed into the store, never buffered); imports are idempotent by nature anyway.
 */
import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DibsError } from '../core/errors.js';
import { idempotencyKeySchema } from '../core/schemas.js';
import type { ServiceStore } from '../core/service-store.js';
import { parseInput } from '../core/validate.js';

export interface IdempotencyOptions {
  /** How long a stored answer is replayed (default 24 h, like Stripe). */
  ttlMs: number;
  /** How long a request that never finished (crashed instance) blocks its key (see inFlightTtl). */
  inFlightTtlMs: number;
}

/** The in-flight TTL when none is configured. */
export const DEFAULT_IN_FLIGHT_TTL_MS = 60_000;
/** Kept above the store's longest operation: the handler's own time, and clocks that differ. */
const IN_FLIGHT_MARGIN_MS = 30_000;

/**
 * How long a request's in-flight record blocks its key: the configured (or default) TTL, but never
 * less than the store's longest operation plus a margin. A shorter record could expire while its
 * request still waits on the store; a retry would then run beside the original, and both could act.
 */
export function inFlightTtl(configuredMs: number | undefined, storeOperationMs: number | undefined): number {
  return Math.max(
    configuredMs ?? DEFAULT_IN_FLIGHT_TTL_MS,
    storeOperationMs === undefined ? 0 : storeOperationMs + IN_FLIGHT_MARGIN_MS,
  );
}

declare module 'fastify' {
  interface FastifyRequest {
    idempotency: { scope: string; key: string } | null;
  }
}

const REPLAYED_HEADERS = ['content-type', 'location'];

export function registerIdempotency(app: FastifyInstance, store: ServiceStore, options: IdempotencyOptions): void {
  app.decorateRequest('idempotency', null);

  // Most requests carry no key: skip the async machinery for them (a promise per request adds up).
  const begin = async (request: FastifyRequest, reply: FastifyReply) => {
    const header = request.headers['idempotency-key']!;
    const key = parseInput(idempotencyKeySchema, Array.isArray(header) ? header[0] : header, 'Idempotency-Key');
    const scope = request.principal?.keyId ?? 'anonymous';
    const fingerprint = fingerprintOf(request);
    // A lock acquire may wait up to `waitMs` before answering: keep its key in flight that long too.
    const waitMs = (request.body as { waitMs?: unknown } | null)?.waitMs;
    // Read before the route's schema has judged the body: any number may be here (a fraction broke
    // the stores' integer TTLs — a 500 found by the fuzzer), so whole milliseconds, bounded.
    const inFlightTtlMs =
      options.inFlightTtlMs + (typeof waitMs === 'number' && waitMs > 0 ? Math.min(Math.ceil(waitMs), 86_400_000) : 0);
    const begun = await store.beginIdempotent(scope, key, fingerprint, inFlightTtlMs);
    if (begun.state === 'started') {
      request.idempotency = { scope, key };
      return;
    }
    if (begun.state === 'in_flight') {
      void reply.header('retry-after', '1');
      throw new DibsError(
        'idempotency_key_in_use',
        'a request with this Idempotency-Key is still being processed; retry later',
        { field: 'Idempotency-Key', retriable: true },
      );
    }
    if (begun.fingerprint !== fingerprint) {
      throw new DibsError(
        'idempotency_key_reused',
        'this Idempotency-Key was already used with a different request (method, path or body); use a new key for a new request',
        { field: 'Idempotency-Key' },
      );
    }
    const { statusCode, headers, body } = begun.response;
    for (const [name, value] of Object.entries(headers)) void reply.header(name, value);
    void reply.header('idempotent-replayed', 'true');
    return reply.status(statusCode).send(body === '' ? undefined : body);
  };
  app.addHook('preHandler', (request, reply, done) => {
    if (request.headers['idempotency-key'] === undefined || !request.routeOptions.config.doc?.idempotent) return done();
    begin(request, reply).then(
      () => {
        if (!reply.sent) done();
      },
      (error: unknown) => done(error as Error),
    );
  });

  const finish = async (
    request: FastifyRequest,
    reply: FastifyReply,
    payload: unknown,
    idem: { scope: string; key: string },
  ) => {
    if (reply.statusCode >= 500) {
      await store
        .abandonIdempotent(idem.scope, idem.key)
        .catch((error: unknown) => request.log.warn({ err: error }, 'could not release an idempotency key'));
      return payload;
    }
    const headers: Record<string, string> = {};
    for (const name of REPLAYED_HEADERS) {
      const value = reply.getHeader(name);
      if (value !== undefined) headers[name] = String(value);
    }
    const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : '';
    // Stored before the answer leaves: an answer the client saw is always replayable.
    await store.completeIdempotent(
      idem.scope,
      idem.key,
      { statusCode: reply.statusCode, headers, body },
      options.ttlMs,
    );
    return payload;
  };
  app.addHook('onSend', (request, reply, payload, done) => {
    const idem = request.idempotency;
    if (!idem) return done(null, payload);
    request.idempotency = null;
    finish(request, reply, payload, idem).then(
      (p) => done(null, p),
      (error: unknown) => done(error as Error),
    );
  });
}

function fingerprintOf(request: FastifyRequest): string {
  const hash = createHash('sha256').update(`${request.method} ${request.url.split('?')[0]}\n`);
  const body = request.body as unknown;
  if (body && typeof (body as { pipe?: unknown }).pipe === 'function')
    hash.update(`stream ${request.headers['content-type'] ?? ''} ${request.headers['content-length'] ?? ''}`);
  else hash.update(stableJson(body ?? null));
  return hash.digest('hex');
}

/** JSON with object keys sorted, so `{a,b}` and `{b,a}` are the same request. */
function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  return JSON.stringify(value) ?? 'null';
}
