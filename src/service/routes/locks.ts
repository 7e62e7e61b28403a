/** `/v1/locks…` and `/v1/counters…`: leases, semaphores and sharded counters over HTTP. */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { DibsError, isDibsError } from '../../core/errors.js';
import { z } from 'zod';
import * as S from '../api-schemas.js';
import { listOwned } from '../auth/tenant.js';
import type { ServiceContext } from '../context.js';
import { bodyObject, pageQuery, pick } from '../http-input.js';
import { parseShellToken, shellLease } from '../lease-token.js';
import { route } from '../routing.js';

/**
 * Aborts when the client goes away before the answer is sent, or when the service begins to shut
 * down (`closing`), so a waiting acquire stops waiting.
 */
export function stopWaiting(reply: FastifyReply, closing: AbortSignal): AbortSignal {
  const controller = new AbortController();
  const onClosing = () => controller.abort(closing.reason);
  if (closing.aborted) onClosing();
  else closing.addEventListener('abort', onClosing, { once: true });
  reply.raw.once('close', () => {
    closing.removeEventListener('abort', onClosing);
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

export const optionalBody = (body: unknown) => {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body))
    throw new DibsError('invalid_input', 'body: must be a JSON object', { field: 'body' });
  return body as Record<string, unknown>;
};

const tag = 'Locks';

export function lockRoutes(app: FastifyInstance, { dibs, metrics, closing }: ServiceContext): void {
  route(
    app,
    {
      method: 'POST',
      url: '/v1/locks/:key/acquire',
      scope: 'locks:write',
      tag,
      summary: 'Acquire a lock (limit 1) or a semaphore slot',
      description:
        "With `waitMs` the request waits for a free slot (FIFO within this instance; with `fair: true` FIFO across every instance, by the store's ticket order); giving up answers 409 `lock_timeout`; an instance that begins to shut down meanwhile answers 503 `unavailable` (retry: another instance will answer).",
      body: S.acquireBodySchema,
      responses: { 201: { description: 'The lease (keep the token)', schema: S.leaseSchema } },
    },
    async (request, reply) => {
      const key = request.tenant.key(request.params.key);
      const body = pick(optionalBody(request.body), ['ttlMs', 'waitMs', 'limit', 'fair']);
      const waits = typeof body.waitMs === 'number' && body.waitMs > 0;
      if (waits) metrics.lockWaiters.inc();
      try {
        const lease = await dibs.semaphores.acquire(key, (body.limit ?? 1) as number, {
          ...(body.ttlMs !== undefined ? { ttlMs: body.ttlMs as number } : {}),
          ...(body.waitMs !== undefined ? { waitMs: body.waitMs as number } : {}),
          ...(body.fair !== undefined ? { fair: body.fair as boolean } : {}),
          signal: stopWaiting(reply, closing),
        });
        return reply.status(201).send(shellLease(lease));
      } catch (error) {
        // given up because the service is shutting down: 503 (retriable), not the caller's timeout
        if (closing.aborted && isDibsError(error) && error.code === 'lock_timeout') throw closing.reason;
        throw error;
      } finally {
        if (waits) metrics.lockWaiters.dec();
      }
    },
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/locks/:key/renew',
      scope: 'locks:write',
      tag,
      summary: 'Extend a lease (owner token only)',
      body: S.renewBodySchema,
      responses: { 200: { description: 'The renewed lease', schema: S.leaseSchema } },
    },
    async (request) => {
      const key = request.tenant.key(request.params.key);
      const body = pick(bodyObject(request), ['token', 'ttlMs', 'limit']);
      const { token, limit } = parseShellToken(body.token, 'token');
      const lease = { key, token, limit: (body.limit ?? limit ?? 1) as number } as never;
      return shellLease(
        await dibs.semaphores.renew(lease, body.ttlMs !== undefined ? { ttlMs: body.ttlMs as number } : {}),
      );
    },
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/locks/:key/release',
      scope: 'locks:write',
      tag,
      summary: 'Release a lease (owner token only)',
      body: S.releaseBodySchema,
      responses: { 204: { description: 'Released' } },
    },
    async (request, reply) => {
      const key = request.tenant.key(request.params.key);
      const body = pick(bodyObject(request), ['token']);
      await dibs.semaphores.release({ key, token: parseShellToken(body.token, 'token').token } as never);
      return reply.status(204).send();
    },
  );

  // Each listed key or counter is read in full, so a page is at most LIST_MAX of them.
  const LIST_MAX = 200;
  const listQuery = z.object({
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(LIST_MAX)
      .optional()
      .meta({ description: `Page size (default 50, at most ${LIST_MAX})` }),
    after: S.pageQuerySchema.shape.after,
  });
  const listPage = <T>(
    request: Parameters<Parameters<typeof route>[2]>[0],
    list: (options: { limit: number; after?: string }) => Promise<{ items: string[]; nextCursor: string | null }>,
    read: (name: string) => Promise<T>,
  ) => {
    const limitGiven = (request.query as { limit?: unknown } | undefined)?.limit;
    if (limitGiven !== undefined && Number(limitGiven) > LIST_MAX)
      throw new DibsError('invalid_input', `query.limit: at most ${LIST_MAX}`, { field: 'query.limit' });
    const { limit = 50, after } = pageQuery(request);
    if (after !== undefined) request.tenant.key(after, 'after');
    return listOwned(request.tenant, list, (name) => name, { limit, ...(after !== undefined ? { after } : {}) }).then(
      async ({ data, nextCursor }) => ({ data: await Promise.all(data.map(read)), nextCursor }),
    );
  };
  route(
    app,
    {
      method: 'GET',
      url: '/v1/locks',
      scope: 'locks:read',
      tag,
      summary:
        'Lock keys ever granted, in key order, each with its holders, waiters and last fence (stores that cannot list them: 501)',
      query: listQuery,
      responses: { 200: { description: 'A page of locks', schema: S.page(S.lockInfoSchema, 'LockPage') } },
    },
    async (request) =>
      listPage(
        request,
        (options) => dibs.semaphores.list(options),
        (key) => dibs.semaphores.inspect(key),
      ),
  );
  route(
    app,
    {
      method: 'GET',
      url: '/v1/counters',
      scope: 'locks:read',
      tag: 'Counters',
      summary: 'Counters in name order with their values (stores that cannot list them: 501)',
      query: listQuery,
      responses: { 200: { description: 'A page of counters', schema: S.page(S.counterSchema, 'CounterPage') } },
    },
    async (request) =>
      listPage(
        request,
        (options) => dibs.counters.list(options),
        (name) => dibs.counters.get(name),
      ),
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/locks/:key',
      scope: 'locks:read',
      tag,
      summary: 'Holders (token prefixes), fences and waiters of a key',
      responses: { 200: { description: 'Lock state', schema: S.lockInfoSchema } },
    },
    async (request) => dibs.semaphores.inspect(request.tenant.key(request.params.key)),
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/counters/:name',
      scope: 'locks:read',
      tag: 'Counters',
      summary: "A sharded counter's exact value",
      responses: { 200: { description: 'The counter', schema: S.counterSchema } },
    },
    async (request) => dibs.counters.get(request.tenant.key(request.params.name, 'name')),
  );
  route(
    app,
    {
      method: 'POST',
      url: '/v1/counters/:name',
      scope: 'locks:write',
      tag: 'Counters',
      summary: 'Add `by` (default 1, may be negative)',
      body: S.counterBodySchema,
      responses: { 200: { description: 'The counter after the change', schema: S.counterSchema } },
    },
    async (request) => {
      const name = request.tenant.key(request.params.name, 'name');
      const body = pick(optionalBody(request.body), ['by']);
      return dibs.counters.incr(name, (body.by ?? 1) as number);
    },
  );
  route(
    app,
    {
      method: 'DELETE',
      url: '/v1/counters/:name',
      scope: 'locks:write',
      tag: 'Counters',
      summary: 'Reset a counter to 0',
      responses: { 204: { description: 'Reset' } },
    },
    async (request, reply) => {
      await dibs.counters.reset(request.tenant.key(request.params.name, 'name'));
      return reply.status(204).send();
    },
  );
}
