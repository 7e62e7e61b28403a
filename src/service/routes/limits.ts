/** `/v1/limits…`: rate limits and quotas shared by every instance, over HTTP. */
import type { FastifyInstance } from 'fastify';
import { isDibsError } from '../../core/errors.js';
import type { LimitInput, LimitUpdate } from '../../core/limits/types.js';
import * as S from '../limit-schemas.js';
import type { ServiceContext } from '../context.js';
import { bodyObject, pick } from '../http-input.js';
import { route } from '../routing.js';
import { parseInput } from '../../core/validate.js';
import { optionalBody, stopWaiting } from './locks.js';

const tag = 'Limits';

export function limitRoutes(app: FastifyInstance, { dibs, closing }: ServiceContext): void {
  route(
    app,
    {
      method: 'POST',
      url: '/v1/limits',
      scope: 'locks:write',
      tag,
      summary: 'Define a rate limit or quota',
      body: S.limitCreateBodySchema,
      responses: { 201: { description: 'The limit, defaults filled in', schema: S.limitSchema } },
    },
    async (request, reply) => {
      const body = pick(bodyObject(request), ['name', 'algorithm', 'limit', 'periodMs', 'burst', 'segments']);
      const name = request.tenant.pool(body.name, 'name');
      return reply.status(201).send(await dibs.limits.create({ ...body, name } as LimitInput));
    },
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/limits',
      scope: 'locks:read',
      tag,
      summary: 'Every limit of this tenant',
      responses: { 200: { description: 'The limits by name', schema: S.limitListSchema } },
    },
    async (request) => ({ data: (await dibs.limits.list()).filter((d) => request.tenant.owns(d.name)) }),
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/limits/:name',
      scope: 'locks:read',
      tag,
      summary: 'One limit',
      responses: { 200: { description: 'The limit', schema: S.limitSchema } },
    },
    async (request) => dibs.limits.get(request.tenant.pool(request.params.name, 'name')),
  );

  route(
    app,
    {
      method: 'PATCH',
      url: '/v1/limits/:name',
      scope: 'locks:write',
      tag,
      summary: 'Change a limit',
      description:
        "Every instance decides by the new definition within a second. A new algorithm or period restarts every key's count; a new limit or burst keeps it.",
      body: S.limitUpdateBodySchema,
      responses: { 200: { description: 'The limit after the change', schema: S.limitSchema } },
    },
    async (request) => {
      const body = pick(bodyObject(request), ['algorithm', 'limit', 'periodMs', 'burst', 'segments']);
      return dibs.limits.update(request.tenant.pool(request.params.name, 'name'), body as LimitUpdate);
    },
  );

  route(
    app,
    {
      method: 'DELETE',
      url: '/v1/limits/:name',
      scope: 'locks:write',
      tag,
      summary: "Delete a limit (and its keys' counts)",
      responses: { 204: { description: 'Deleted' } },
    },
    async (request, reply) => {
      await dibs.limits.delete(request.tenant.pool(request.params.name, 'name'));
      return reply.status(204).send();
    },
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/limits/:name/take',
      scope: 'locks:write',
      tag,
      summary: 'Take units now, or learn the exact wait',
      description:
        'Decided by the store in one atomic step by its own clock. A denial is an answer, not an error: 200 with `allowed: false`, `retryAfterMs`, and a `Retry-After` header (seconds, rounded up).',
      body: S.takeBodySchema,
      responses: { 200: { description: 'The decision', schema: S.limitDecisionSchema } },
    },
    async (request, reply) => {
      const body = pick(optionalBody(request.body), ['key', 'n']);
      const decision = await dibs.limits.take(
        request.tenant.pool(request.params.name, 'name'),
        (body.n ?? 1) as number,
        body.key !== undefined ? { key: body.key as string } : {},
      );
      if (!decision.allowed) void reply.header('retry-after', String(Math.ceil(decision.retryAfterMs / 1000)));
      return decision;
    },
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/limits/:name/peek',
      scope: 'locks:read',
      tag,
      summary: "A key's allowance now, without taking",
      description:
        "What a take of `n` (default 1) would answer now, by the store's clock, with nothing taken or written: `remaining` units, and when `n` would be refused `allowed: false` with the exact `retryAfterMs`.",
      query: S.peekQuerySchema,
      responses: { 200: { description: 'The decision a take would get', schema: S.limitDecisionSchema } },
    },
    async (request) => {
      const { key, n } = parseInput(S.peekQuerySchema, request.query ?? {}, 'query');
      return dibs.limits.peek(
        request.tenant.pool(request.params.name, 'name'),
        n ?? 1,
        key !== undefined ? { key } : {},
      );
    },
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/limits/:name/wait',
      scope: 'locks:write',
      tag,
      summary: 'Take units, waiting up to `waitMs` for them',
      description:
        'Sleeps out the exact wait the store computed (no polling). Not admitted within `waitMs`: 429 `rate_limited`; an instance that begins to shut down meanwhile answers 503 `unavailable`.',
      body: S.waitBodySchema,
      responses: { 200: { description: 'Admitted', schema: S.limitDecisionSchema } },
    },
    async (request, reply) => {
      // the HTTP bound of a wait (≤ 60 s, required) is checked here; the rest by the library
      const body = parseInput(S.waitBodySchema, bodyObject(request));
      try {
        return await dibs.limits.waitFor(request.tenant.pool(request.params.name, 'name'), body.n ?? 1, {
          ...(body.key !== undefined ? { key: body.key } : {}),
          waitMs: body.waitMs,
          signal: stopWaiting(reply, closing),
        });
      } catch (error) {
        if (closing.aborted && isDibsError(error) && error.code === 'rate_limited') throw closing.reason;
        throw error;
      }
    },
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/limits/:name/reset',
      scope: 'locks:write',
      tag,
      summary: 'Give one key its full allowance back',
      body: S.resetBodySchema,
      responses: { 204: { description: 'Reset' } },
    },
    async (request, reply) => {
      const body = pick(optionalBody(request.body), ['key']);
      await dibs.limits.reset(
        request.tenant.pool(request.params.name, 'name'),
        body.key !== undefined ? { key: body.key as string } : {},
      );
      return reply.status(204).send();
    },
  );
}
