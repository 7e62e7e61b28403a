/** `/v1/sales…`, `/v1/reservations…`, `/v1/wishlist…`: flash sales over HTTP, a thin shell over `dibs.sales`. */
import type { FastifyInstance } from 'fastify';
import type { Dibs } from '../../core/dibs.js';
import { DibsError } from '../../core/errors.js';
import { bodyObject, idempotencyKey, pageQuery, pick, queryString } from '../http-input.js';

type SaleParams = { sale: string };
type HoldParams = { hold: string };

export function saleRoutes(app: FastifyInstance, dibs: Dibs): void {
  app.post('/v1/sales', async (request, reply) => reply.status(201).send(await dibs.sales.create(bodyObject(request) as never)));

  app.get('/v1/sales', async (request) => {
    const sku = queryString(request, 'sku');
    const page = await dibs.sales.list({ ...pageQuery(request), ...(sku ? { sku } : {}) });
    return { data: page.items, nextCursor: page.nextCursor };
  });

  app.get<{ Params: SaleParams }>('/v1/sales/:sale', async (request) => dibs.sales.get(request.params.sale));
  app.patch<{ Params: SaleParams }>('/v1/sales/:sale', async (request) => dibs.sales.update(request.params.sale, bodyObject(request) as never));
  app.post<{ Params: SaleParams }>('/v1/sales/:sale/cancel', async (request) => dibs.sales.cancel(request.params.sale));
  app.get<{ Params: SaleParams }>('/v1/sales/:sale/audit', async (request) => ({ violations: await dibs.sales.audit(request.params.sale) }));

  app.post<{ Params: SaleParams }>('/v1/sales/:sale/claims', async (request, reply) => {
    const body = pick(bodyObject(request), ['customer', 'quantity', 'idempotencyKey']);
    const key = idempotencyKey(request, body.idempotencyKey);
    const result = await dibs.sales.buy(request.params.sale, body.customer as string, (body.quantity ?? 1) as number, key === undefined ? {} : { idempotencyKey: key });
    if (result.replayed) void reply.header('idempotent-replayed', 'true');
    return reply.status(201).send(result);
  });

  app.post<{ Params: SaleParams }>('/v1/sales/:sale/reservations', async (request, reply) => {
    const body = pick(bodyObject(request), ['customer', 'quantity', 'ttlMs', 'idempotencyKey']);
    const key = idempotencyKey(request, body.idempotencyKey);
    if (body.ttlMs === undefined) throw new DibsError('invalid_input', 'ttlMs: required, how long to hold the units (1000 – 86400000)', { field: 'ttlMs' });
    const result = await dibs.sales.reserve(request.params.sale, body.customer as string, (body.quantity ?? 1) as number, body.ttlMs as number, key === undefined ? {} : { idempotencyKey: key });
    if (result.replayed) void reply.header('idempotent-replayed', 'true');
    return reply.status(201).send(result);
  });

  app.get<{ Params: HoldParams }>('/v1/reservations/:hold', async (request) => dibs.sales.hold(request.params.hold));
  app.post<{ Params: HoldParams }>('/v1/reservations/:hold/confirm', async (request, reply) => {
    const result = await dibs.sales.confirm(request.params.hold);
    if (result.replayed) void reply.header('idempotent-replayed', 'true');
    return reply.status(result.replayed ? 200 : 201).send(result);
  });
  app.post<{ Params: HoldParams }>('/v1/reservations/:hold/cancel', async (request) => dibs.sales.cancelHold(request.params.hold));

  app.post('/v1/wishlist', async (request, reply) => {
    const { sku, customer, ...channels } = pick(bodyObject(request), ['sku', 'customer', 'email', 'webPush', 'webhook']);
    return reply.status(201).send(await dibs.sales.wish(sku as string, customer as string, channels as never));
  });
  app.get<{ Params: { sku: string } }>('/v1/wishlist/:sku', async (request) => {
    const page = await dibs.sales.wishlist(request.params.sku, pageQuery(request));
    return { data: page.items, nextCursor: page.nextCursor };
  });
  app.delete<{ Params: { sku: string; customer: string } }>('/v1/wishlist/:sku/:customer', async (request, reply) => {
    await dibs.sales.unwish(request.params.sku, request.params.customer);
    return reply.status(204).send();
  });
}
