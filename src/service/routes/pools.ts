/** `/v1/pools…`: coupon pools over HTTP — a thin shell over `dibs.pools`. */
import type { FastifyInstance } from 'fastify';
import type { Readable } from 'node:stream';
import type { Dibs } from '../../core/dibs.js';
import { DibsError } from '../../core/errors.js';
import type { CodeStatus } from '../../core/types.js';
import { bodyObject, idempotencyKey, pageQuery, pick, queryString } from '../http-input.js';

type PoolParams = { pool: string };
type CodeParams = { pool: string; code: string };

export function poolRoutes(app: FastifyInstance, dibs: Dibs): void {
  app.post('/v1/pools', async (request, reply) => {
    const pool = await dibs.pools.create(bodyObject(request) as never);
    return reply.status(201).send(pool);
  });

  app.get('/v1/pools', async (request) => {
    const page = await dibs.pools.list(pageQuery(request));
    return { data: page.items, nextCursor: page.nextCursor };
  });

  app.get<{ Params: PoolParams }>('/v1/pools/:pool', async (request) => dibs.pools.get(request.params.pool));

  app.patch<{ Params: PoolParams }>('/v1/pools/:pool', async (request) => dibs.pools.update(request.params.pool, bodyObject(request) as never));

  app.delete<{ Params: PoolParams }>('/v1/pools/:pool', async (request, reply) => {
    await dibs.pools.delete(request.params.pool);
    return reply.status(204).send();
  });

  // CSV/plain text bodies arrive as the raw request stream (see app.ts) and are imported as they
  // stream in; a JSON body carries `{ codes: [...] }`.
  app.post<{ Params: PoolParams }>('/v1/pools/:pool/codes', async (request) => {
    const { pool } = request.params;
    if (isStream(request.body)) return dibs.pools.importCsv(pool, request.body);
    const { codes } = pick(bodyObject(request), ['codes']);
    if (!Array.isArray(codes)) throw new DibsError('invalid_input', 'codes: must be an array of strings (or send text/csv)', { field: 'codes' });
    return dibs.pools.importCodes(pool, codes);
  });

  app.post<{ Params: PoolParams }>('/v1/pools/:pool/claims', async (request, reply) => {
    const { pool } = request.params;
    const body = pick(bodyObject(request), ['claimant', 'idempotencyKey', 'count']);
    const key = idempotencyKey(request, body.idempotencyKey);
    const options = key === undefined ? {} : { idempotencyKey: key };
    if (typeof body.claimant !== 'string') throw new DibsError('invalid_input', 'claimant: required, a string', { field: 'claimant' });
    if (body.count !== undefined) {
      const result = await dibs.pools.claimMany(pool, body.claimant, body.count as number, options);
      if (result.replayed) void reply.header('idempotent-replayed', 'true');
      return reply.status(result.status === 'claimed' ? 201 : 200).send(result);
    }
    const result = await dibs.pools.claim(pool, body.claimant, options);
    if (result.replayed) void reply.header('idempotent-replayed', 'true');
    return reply.status(result.status === 'claimed' ? 201 : 200).send(result);
  });

  app.get<{ Params: { pool: string; claimant: string } }>('/v1/pools/:pool/claimants/:claimant', async (request) => ({
    claimant: request.params.claimant,
    codes: await dibs.pools.holdings(request.params.pool, request.params.claimant),
  }));

  app.get<{ Params: CodeParams }>('/v1/pools/:pool/codes/:code', async (request) => dibs.pools.code(request.params.pool, request.params.code));

  for (const action of ['release', 'redeem', 'revoke'] as const) {
    app.post<{ Params: CodeParams }>(`/v1/pools/:pool/codes/:code/${action}`, async (request) => {
      const { pool, code } = request.params;
      if (action === 'revoke') return dibs.pools.revoke(pool, code);
      const body = request.body === undefined || request.body === null ? {} : pick(bodyObject(request), ['claimant']);
      if (body.claimant !== undefined && typeof body.claimant !== 'string') throw new DibsError('invalid_input', 'claimant: must be a string', { field: 'claimant' });
      const options = body.claimant === undefined ? {} : { claimant: body.claimant as string };
      return action === 'release' ? dibs.pools.release(pool, code, options) : dibs.pools.redeem(pool, code, options);
    });
  }

  app.get<{ Params: PoolParams }>('/v1/pools/:pool/audit', async (request) => ({ violations: await dibs.pools.audit(request.params.pool) }));

  app.get<{ Params: PoolParams }>('/v1/pools/:pool/export', async (request, reply) => {
    const status = queryString(request, 'status') as CodeStatus | undefined;
    const csv = await dibs.pools.exportCsv(request.params.pool, status ? { status } : {});
    return reply
      .type('text/csv; charset=utf-8')
      .header('content-disposition', `attachment; filename="${request.params.pool}${status ? `-${status}` : ''}.csv"`)
      .send(csv);
  });

  app.get('/v1/events', async (request) => {
    const { limit, after } = pageQuery(request);
    const pool = queryString(request, 'pool');
    return { data: await dibs.pools.events({ ...(limit ? { limit } : {}), ...(after ? { after } : {}), ...(pool ? { pool } : {}) }) };
  });
}

function isStream(body: unknown): body is Readable {
  return typeof (body as Readable | undefined)?.pipe === 'function';
}
