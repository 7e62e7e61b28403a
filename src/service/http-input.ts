/** Request parsing helpers: query strings and bodies go through the core schemas. */
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { DibsError } from '../core/errors.js';
import { parseInput } from '../core/validate.js';

/** The JSON body as an object; anything else (array, string, missing) is an `invalid_input`. */
export function bodyObject(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  if (body === undefined || body === null)
    throw new DibsError('invalid_input', 'body: a JSON object is required (content-type: application/json)', {
      field: 'body',
    });
  if (typeof body !== 'object' || Array.isArray(body))
    throw new DibsError('invalid_input', 'body: must be a JSON object', { field: 'body' });
  return body as Record<string, unknown>;
}

const pageQuerySchema = z
  .object({
    limit: z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(1).max(1000).optional(),
    after: z.string().max(1024).optional(),
  })
  .loose();

export function pageQuery(request: FastifyRequest): { limit?: number; after?: string } {
  const { limit, after } = parseInput(pageQuerySchema, request.query ?? {}, 'query');
  return { ...(limit !== undefined ? { limit } : {}), ...(after !== undefined ? { after } : {}) };
}

export function queryString(request: FastifyRequest, name: string): string | undefined {
  const value = (request.query as Record<string, unknown> | undefined)?.[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string')
    throw new DibsError('invalid_input', `query.${name}: give it once`, { field: `query.${name}` });
  return value;
}

/**
 * The idempotency key from the body field or the `Idempotency-Key` header (Stripe's header);
 * when both are given they must agree.
 */
export function idempotencyKey(request: FastifyRequest, fromBody: unknown): string | undefined {
  const header = request.headers['idempotency-key'];
  const fromHeader = Array.isArray(header) ? header[0] : header;
  if (fromBody !== undefined && fromHeader !== undefined && fromBody !== fromHeader) {
    throw new DibsError('invalid_input', 'idempotencyKey: the body field and the Idempotency-Key header differ', {
      field: 'idempotencyKey',
    });
  }
  const key = fromBody ?? fromHeader;
  if (key !== undefined && typeof key !== 'string')
    throw new DibsError('invalid_input', 'idempotencyKey: must be a string', { field: 'idempotencyKey' });
  return key;
}

/** Picks the known fields of a body, refusing unknown ones (typos should not pass silently). */
export function pick<const K extends string>(
  body: Record<string, unknown>,
  allowed: readonly K[],
): Partial<Record<K, unknown>> {
  const unknown = Object.keys(body).filter((k) => !(allowed as readonly string[]).includes(k));
  if (unknown.length > 0)
    throw new DibsError('invalid_input', `body: unknown field(s) ${unknown.map((k) => `'${k}'`).join(', ')}`, {
      field: unknown[0],
    });
  return body as Partial<Record<K, unknown>>;
}

/**
 * Runs `fn`; if it rejects the input, first makes sure the object exists: a request about another
 * tenant's (or no) pool/sale answers 404 whatever its body, and never reveals by a 400 that the
 * name was worth validating against. Costs a read only on the error path.
 */
export async function notFoundBeforeBadInput<T>(exists: () => Promise<unknown>, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof DibsError && error.code === 'invalid_input') await exists();
    throw error;
  }
}
