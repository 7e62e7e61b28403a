/** `/v1/pools…`: coupon pools over HTTP — a thin shell over `dibs.pools`, namespaced per tenant. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { DibsError } from '../../core/errors.js';
import type { CodeStatus } from '../../core/types.js';
import { listOwned } from '../auth/tenant.js';
import * as S from '../api-schemas.js';
import type { ServiceContext } from '../context.js';
import { bodyObject, idempotencyKey, pageQuery, pick, queryString } from '../http-input.js';
import { route } from '../routing.js';

const tag = 'Pools';
const poolParam = (request: FastifyRequest<{ Params: Record<string, string> }>) =>
  request.tenant.pool(request.params.pool);

export function poolRoutes(app: FastifyInstance, { dibs, metrics }: ServiceContext): void {
  route(
    app,
    {
      method: 'POST',
      url: '/v1/pools',
      scope: 'pools:admin',
      tag,
      summary: 'Create a pool',
      body: S.createPoolSchema,
      responses: { 201: { description: 'The new pool', schema: S.poolSchema } },
    },
    async (request, reply) => {
      const body = bodyObject(request);
      const pool = await dibs.pools.create({ ...body, name: request.tenant.pool(body.name, 'name') } as never);
      return reply.status(201).send(pool);
    },
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/pools',
      scope: 'pools:read',
      tag,
      summary: 'List pools (by name)',
      query: S.pageQuerySchema,
      responses: { 200: { description: 'A page of pools', schema: S.page(S.poolSchema, 'PoolPage') } },
    },
    async (request) => {
      const { limit = 100, after } = pageQuery(request);
      if (after !== undefined) request.tenant.pool(after, 'after');
      return listOwned(
        request.tenant,
        (options) => dibs.pools.list(options),
        (pool) => pool.name,
        { limit, ...(after !== undefined ? { after } : {}) },
      );
    },
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/pools/:pool',
      scope: 'pools:read',
      tag,
      summary: 'A pool with its counts',
      responses: { 200: { description: 'The pool', schema: S.poolSchema } },
    },
    async (request) => dibs.pools.get(poolParam(request)),
  );

  route(
    app,
    {
      method: 'PATCH',
      url: '/v1/pools/:pool',
      scope: 'pools:admin',
      tag,
      summary: 'Change limit, low-stock threshold, validity window or metadata',
      body: S.updatePoolSchema,
      responses: { 200: { description: 'The pool', schema: S.poolSchema } },
    },
    async (request) => dibs.pools.update(poolParam(request), bodyObject(request) as never),
  );

  route(
    app,
    {
      method: 'DELETE',
      url: '/v1/pools/:pool',
      scope: 'pools:admin',
      tag,
      summary: 'Delete a pool with its codes and claims',
      responses: { 204: { description: 'Deleted' } },
    },
    async (request, reply) => {
      await dibs.pools.delete(poolParam(request));
      return reply.status(204).send();
    },
  );

  // CSV/plain text bodies arrive as the raw request stream (see app.ts) and are imported as they
  // stream in; a JSON body carries `{ codes: [...] }`.
  route(
    app,
    {
      method: 'POST',
      url: '/v1/pools/:pool/codes',
      scope: 'pools:admin',
      tag,
      summary: 'Import codes (JSON list or streamed text/csv)',
      body: S.importBodySchema,
      csv: true,
      responses: { 200: { description: 'Counts', schema: S.importResultSchema } },
    },
    async (request) => {
      const pool = poolParam(request);
      if (isStream(request.body)) return dibs.pools.importCsv(pool, request.body);
      const { codes } = pick(bodyObject(request), ['codes']);
      if (!Array.isArray(codes))
        throw new DibsError(
          'invalid_input',
          'codes: must be an array of codes or {code, startsAt?, expiresAt?} objects (or send text/csv)',
          { field: 'codes' },
        );
      return dibs.pools.importCodes(pool, codes);
    },
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/pools/:pool/claims',
      scope: 'pools:claim',
      tag,
      summary: 'Claim a code (or `count` codes) for a claimant',
      description:
        'At the per-claimant limit the answer is 200 `already-held` with a code the claimant holds. With an idempotency key a retry returns the original answer.',
      body: S.claimBodySchema,
      responses: {
        201: { description: 'Claimed', schema: S.claimResultSchema },
        200: { description: 'Already held (at the limit)', schema: S.claimResultSchema },
      },
    },
    async (request, reply) => {
      const pool = poolParam(request);
      const body = pick(bodyObject(request), ['claimant', 'idempotencyKey', 'count']);
      const key = idempotencyKey(request, body.idempotencyKey);
      const options = key === undefined ? {} : { idempotencyKey: key };
      if (typeof body.claimant !== 'string')
        throw new DibsError('invalid_input', 'claimant: required, a string', { field: 'claimant' });
      const claimant = body.claimant;
      const result =
        body.count !== undefined
          ? await metrics.claim(
              'pool',
              () => dibs.pools.claimMany(pool, claimant, body.count as number, options),
              (r) => r.status,
            )
          : await metrics.claim(
              'pool',
              () => dibs.pools.claim(pool, claimant, options),
              (r) => r.status,
            );
      if (result.replayed) void reply.header('idempotent-replayed', 'true');
      return reply.status(result.status === 'claimed' ? 201 : 200).send(result);
    },
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/pools/:pool/claimants/:claimant',
      scope: 'pools:read',
      tag,
      summary: 'Codes a claimant holds',
      responses: { 200: { description: 'Holdings', schema: S.holdingsSchema } },
    },
    async (request) => ({
      claimant: request.params.claimant,
      codes: await dibs.pools.holdings(poolParam(request), request.params.claimant!),
    }),
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/pools/:pool/codes/:code',
      scope: 'pools:read',
      tag,
      summary: 'One code: status and holder',
      responses: { 200: { description: 'The code', schema: S.codeInfoSchema } },
    },
    async (request) => dibs.pools.code(poolParam(request), request.params.code!),
  );

  for (const action of ['release', 'redeem', 'unredeem', 'revoke'] as const) {
    route(
      app,
      {
        method: 'POST',
        url: `/v1/pools/:pool/codes/:code/${action}`,
        scope: action === 'revoke' || action === 'unredeem' ? 'pools:admin' : 'pools:claim',
        tag,
        summary: {
          release: 'Give a claimed code back to the pool',
          redeem:
            'Mark a claimed code used — at checkout, for an order (the same order again answers the same; another: already_redeemed)',
          unredeem: 'Refund: a redeemed code goes back to its holder (recorded as a code.unredeemed event)',
          revoke: 'Withdraw a code for good',
        }[action],
        ...{
          release: { body: S.claimantBodySchema },
          redeem: { body: S.redeemBodySchema },
          unredeem: { body: S.unredeemBodySchema },
          revoke: {},
        }[action],
        responses: { 200: { description: 'The code', schema: S.codeInfoSchema } },
      },
      async (request) => {
        const pool = poolParam(request);
        const code = request.params.code!;
        if (action === 'revoke') return dibs.pools.revoke(pool, code);
        const body =
          request.body === undefined || request.body === null
            ? {}
            : pick(
                bodyObject(request),
                action === 'release' ? ['claimant'] : action === 'redeem' ? ['claimant', 'orderId'] : ['orderId'],
              );
        for (const field of ['claimant', 'orderId'] as const) {
          if (body[field] !== undefined && typeof body[field] !== 'string')
            throw new DibsError('invalid_input', `${field}: must be a string`, { field });
        }
        const options = {
          ...(body.claimant === undefined ? {} : { claimant: body.claimant as string }),
          ...(body.orderId === undefined ? {} : { orderId: body.orderId as string }),
        };
        if (action === 'release') return dibs.pools.release(pool, code, options);
        if (action === 'unredeem') return dibs.pools.unredeem(pool, code, options);
        return dibs.pools.redeem(pool, code, options);
      },
    );
  }

  route(
    app,
    {
      method: 'POST',
      url: '/v1/pools/:pool/codes/:code/hold',
      scope: 'pools:claim',
      tag,
      summary:
        'Hold a code for a checkout (no other claimant can redeem or hold it until the hold expires or is released; holding again renews)',
      body: S.holdBodySchema,
      responses: { 200: { description: 'The code with its hold', schema: S.codeInfoSchema } },
    },
    async (request) => {
      const body = pick(bodyObject(request), ['claimant', 'ttlMs']);
      if (typeof body.claimant !== 'string')
        throw new DibsError('invalid_input', 'claimant: required, a string', { field: 'claimant' });
      if (typeof body.ttlMs !== 'number')
        throw new DibsError('invalid_input', 'ttlMs: required, a number of milliseconds', { field: 'ttlMs' });
      return dibs.pools.hold(poolParam(request), request.params.code!, body.claimant, body.ttlMs);
    },
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/pools/:pool/codes/:code/hold/release',
      scope: 'pools:claim',
      tag,
      summary: 'End a checkout hold early (claimant, when given, must be its holder)',
      body: S.claimantBodySchema,
      responses: { 200: { description: 'The code', schema: S.codeInfoSchema } },
    },
    async (request) => {
      const body = request.body === undefined || request.body === null ? {} : pick(bodyObject(request), ['claimant']);
      if (body.claimant !== undefined && typeof body.claimant !== 'string')
        throw new DibsError('invalid_input', 'claimant: must be a string', { field: 'claimant' });
      return dibs.pools.releaseHold(
        poolParam(request),
        request.params.code!,
        body.claimant === undefined ? {} : { claimant: body.claimant as string },
      );
    },
  );

  route(
    app,
    {
      method: 'PATCH',
      url: '/v1/pools/:pool/codes/:code',
      scope: 'pools:admin',
      tag,
      summary: "Set a code's own validity window (startsAt/expiresAt; null or absent = open on that side)",
      body: S.codeWindowBodySchema,
      responses: { 200: { description: 'The code', schema: S.codeInfoSchema } },
    },
    async (request) => dibs.pools.setCodeWindow(poolParam(request), request.params.code!, bodyObject(request) as never),
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/pools/:pool/multi-use-codes',
      scope: 'pools:admin',
      tag,
      summary: 'Add a multi-use code (one code, N uses; each order uses it once)',
      body: S.multiUseCodeBodySchema,
      responses: { 201: { description: 'The code with its uses', schema: S.codeInfoSchema } },
    },
    async (request, reply) =>
      reply.status(201).send(await dibs.pools.addMultiUseCode(poolParam(request), bodyObject(request) as never)),
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/pools/:pool/codes/:code/validate',
      scope: 'pools:read',
      tag,
      summary: 'Whether the code can be redeemed now (by the claimant, when given) and why not; changes nothing',
      body: S.claimantBodySchema,
      responses: { 200: { description: 'The answer', schema: S.validationSchema } },
    },
    async (request) => {
      const body = request.body === undefined || request.body === null ? {} : pick(bodyObject(request), ['claimant']);
      if (body.claimant !== undefined && typeof body.claimant !== 'string')
        throw new DibsError('invalid_input', 'claimant: must be a string', { field: 'claimant' });
      return dibs.pools.validate(
        poolParam(request),
        request.params.code!,
        body.claimant === undefined ? {} : { claimant: body.claimant as string },
      );
    },
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/pools/:pool/audit',
      scope: 'pools:read',
      tag,
      summary: 'Invariant violations of the pool (empty = clean)',
      responses: { 200: { description: 'Violations', schema: S.violationsSchema } },
    },
    async (request) => ({ violations: await dibs.pools.audit(poolParam(request)) }),
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/pools/:pool/export',
      scope: 'pools:read',
      tag,
      summary: 'Every code as CSV (code,status,claimant,claimed_at,redeemed_at,starts_at,expires_at)',
      query: z.object({ status: z.enum(['free', 'claimed', 'redeemed', 'revoked']).optional() }),
      responses: { 200: { description: 'CSV, streamed', contentType: 'text/csv' } },
    },
    async (request, reply) => {
      const pool = poolParam(request);
      const status = queryString(request, 'status') as CodeStatus | undefined;
      const csv = await dibs.pools.exportCsv(pool, status ? { status } : {});
      return reply
        .type('text/csv; charset=utf-8')
        .header('content-disposition', `attachment; filename="${request.params.pool}${status ? `-${status}` : ''}.csv"`)
        .send(csv);
    },
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/events',
      scope: 'pools:read',
      tag: 'Events',
      summary: 'Outbox events (low stock, sale live, …), oldest first',
      query: S.pageQuerySchema.extend({ pool: z.string().optional() }),
      responses: { 200: { description: 'A page of events', schema: S.page(S.eventSchema, 'EventPage') } },
    },
    async (request) => {
      const { limit = 100, after } = pageQuery(request);
      const tenant = request.tenant;
      const poolName = queryString(request, 'pool');
      const pool = poolName === undefined ? undefined : tenant.pool(poolName);
      if (pool) await dibs.pools.get(pool); // another tenant's (or no) pool: 404, not an empty list
      // Events of every tenant share one log: read pages and keep this tenant's (bounded work).
      const data = [];
      let cursor = after;
      let more = true;
      for (let round = 0; more && data.length < limit && round < 20; round++) {
        const events = await dibs.pools.events({
          limit,
          ...(cursor ? { after: cursor } : {}),
          ...(pool ? { pool } : {}),
        });
        for (const event of events) {
          cursor = event.id;
          const owner = event.payload.pool ?? event.payload.sale;
          if (typeof owner === 'string' && !tenant.owns(owner)) continue;
          if (typeof owner !== 'string' && tenant.prefix) continue;
          data.push(event);
          if (data.length >= limit) break;
        }
        more = events.length === limit;
      }
      return { data, nextCursor: more || data.length >= limit ? (cursor ?? null) : null };
    },
  );
}

function isStream(body: unknown): body is Readable {
  return typeof (body as Readable | undefined)?.pipe === 'function';
}
