/** `/v1/sales…`, `/v1/reservations…`, `/v1/wishlist…`: flash sales over HTTP, a thin shell over `dibs.sales`. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { DibsError, notFound } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import * as S from '../api-schemas.js';
import { listOwned } from '../auth/tenant.js';
import type { ServiceContext } from '../context.js';
import { bodyObject, idempotencyKey, pageQuery, pick, queryString } from '../http-input.js';
import { route } from '../routing.js';

const tag = 'Sales';
type Req = FastifyRequest<{ Params: Record<string, string> }>;
const saleParam = (request: Req) => request.tenant.sale(request.params.sale);

export function saleRoutes(app: FastifyInstance, { dibs, metrics }: ServiceContext): void {
  /** A hold of this tenant's sales, or 404 (another tenant's hold does not exist for this one). */
  const ownHold = async (request: Req) => {
    const id = request.params.hold!;
    const hold = await dibs.sales.hold(id);
    if (!request.tenant.owns(hold.saleId)) throw notFound('hold', id);
    return hold;
  };

  route(
    app,
    {
      method: 'POST',
      url: '/v1/sales',
      scope: 'sales:admin',
      tag,
      summary: 'Create a sale',
      body: S.createSaleSchema,
      responses: { 201: { description: 'The sale', schema: S.saleSchema } },
    },
    async (request, reply) => {
      const body = bodyObject(request);
      const sale = await dibs.sales.create({
        ...body,
        id: request.tenant.sale(body.id ?? newId('sale'), 'id'),
        ...(body.sku !== undefined ? { sku: request.tenant.sku(body.sku) } : {}),
      } as never);
      return reply.status(201).send(sale);
    },
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/sales',
      scope: 'sales:read',
      tag,
      summary: 'List sales (by id), optionally of one SKU',
      query: S.pageQuerySchema.extend({ sku: z.string().optional() }),
      responses: { 200: { description: 'A page of sales', schema: S.page(S.saleSchema, 'SalePage') } },
    },
    async (request) => {
      const skuGiven = queryString(request, 'sku');
      const sku = skuGiven === undefined ? undefined : request.tenant.sku(skuGiven);
      const { limit = 100, after } = pageQuery(request);
      if (after !== undefined) request.tenant.sale(after, 'after');
      return listOwned(
        request.tenant,
        (options) => dibs.sales.list({ ...options, ...(sku ? { sku } : {}) }),
        (sale) => sale.id,
        { limit, ...(after !== undefined ? { after } : {}) },
      );
    },
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/sales/:sale',
      scope: 'sales:read',
      tag,
      summary: 'A sale with sold/held/available',
      responses: { 200: { description: 'The sale', schema: S.saleSchema } },
    },
    async (request) => dibs.sales.get(saleParam(request)),
  );
  route(
    app,
    {
      method: 'PATCH',
      url: '/v1/sales/:sale',
      scope: 'sales:admin',
      tag,
      summary: 'Change window, cap, limit or metadata',
      body: S.updateSaleSchema,
      responses: { 200: { description: 'The sale', schema: S.saleSchema } },
    },
    async (request) => dibs.sales.update(saleParam(request), bodyObject(request) as never),
  );
  route(
    app,
    {
      method: 'POST',
      url: '/v1/sales/:sale/cancel',
      scope: 'sales:admin',
      tag,
      summary: 'Cancel a sale',
      responses: { 200: { description: 'The sale', schema: S.saleSchema } },
    },
    async (request) => dibs.sales.cancel(saleParam(request)),
  );
  route(
    app,
    {
      method: 'GET',
      url: '/v1/sales/:sale/audit',
      scope: 'sales:read',
      tag,
      summary: 'Invariant violations of the sale (empty = clean)',
      responses: { 200: { description: 'Violations', schema: S.violationsSchema } },
    },
    async (request) => ({ violations: await dibs.sales.audit(saleParam(request)) }),
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/sales/:sale/claims',
      scope: 'sales:buy',
      tag,
      summary: 'Buy units (an order)',
      body: S.buyBodySchema,
      responses: { 201: { description: 'The order', schema: S.orderResultSchema } },
    },
    async (request, reply) => {
      const sale = saleParam(request);
      const body = pick(bodyObject(request), ['customer', 'quantity', 'idempotencyKey']);
      const key = idempotencyKey(request, body.idempotencyKey);
      const result = await metrics.claim(
        'sale',
        () =>
          dibs.sales.buy(
            sale,
            body.customer as string,
            (body.quantity ?? 1) as number,
            key === undefined ? {} : { idempotencyKey: key },
          ),
        () => 'bought',
      );
      if (result.replayed) void reply.header('idempotent-replayed', 'true');
      return reply.status(201).send(result);
    },
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/sales/:sale/reservations',
      scope: 'sales:buy',
      tag,
      summary: 'Hold units for a while (cart)',
      body: S.reserveBodySchema,
      responses: { 201: { description: 'The hold', schema: S.holdResultSchema } },
    },
    async (request, reply) => {
      const sale = saleParam(request);
      const body = pick(bodyObject(request), ['customer', 'quantity', 'ttlMs', 'idempotencyKey']);
      const key = idempotencyKey(request, body.idempotencyKey);
      if (body.ttlMs === undefined)
        throw new DibsError('invalid_input', 'ttlMs: required, how long to hold the units (1000 – 86400000)', {
          field: 'ttlMs',
        });
      const result = await metrics.claim(
        'reservation',
        () =>
          dibs.sales.reserve(
            sale,
            body.customer as string,
            (body.quantity ?? 1) as number,
            body.ttlMs as number,
            key === undefined ? {} : { idempotencyKey: key },
          ),
        () => 'held',
      );
      if (result.replayed) void reply.header('idempotent-replayed', 'true');
      return reply.status(201).send(result);
    },
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/sales/:sale/holds',
      scope: 'sales:read',
      tag,
      summary: "A sale's active holds, soonest expiry first (only one customer's with ?customer=)",
      query: z.object({ customer: z.string().optional(), limit: S.pageQuerySchema.shape.limit }),
      responses: {
        200: { description: 'Active holds (the first `limit`, default 100)', schema: S.page(S.holdSchema, 'HoldPage') },
      },
    },
    async (request) => {
      const customer = queryString(request, 'customer');
      const { limit = 100 } = pageQuery(request);
      return {
        data: await dibs.sales.holds(saleParam(request), { limit, ...(customer !== undefined ? { customer } : {}) }),
        nextCursor: null,
      };
    },
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/reservations/:hold',
      scope: 'sales:read',
      tag,
      summary: 'A hold',
      responses: { 200: { description: 'The hold', schema: S.holdSchema } },
    },
    async (request) => ownHold(request),
  );
  route(
    app,
    {
      method: 'POST',
      url: '/v1/reservations/:hold/confirm',
      scope: 'sales:buy',
      tag,
      summary: 'Turn a hold into an order',
      responses: {
        201: { description: 'The order', schema: S.orderResultSchema },
        200: { description: 'Already confirmed (replay): the same order', schema: S.orderResultSchema },
      },
    },
    async (request, reply) => {
      await ownHold(request);
      const result = await dibs.sales.confirm(request.params.hold!);
      if (result.replayed) void reply.header('idempotent-replayed', 'true');
      return reply.status(result.replayed ? 200 : 201).send(result);
    },
  );
  route(
    app,
    {
      method: 'POST',
      url: '/v1/reservations/:hold/cancel',
      scope: 'sales:buy',
      tag,
      summary: 'Give held units back',
      responses: { 200: { description: 'The hold', schema: S.holdSchema } },
    },
    async (request) => {
      await ownHold(request);
      return dibs.sales.cancelHold(request.params.hold!);
    },
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/wishlist',
      scope: 'sales:buy',
      tag: 'Wishlist',
      summary: 'Be told when a sale of this SKU goes live',
      body: S.wishBodySchema,
      responses: { 201: { description: 'The entry', schema: S.wishlistEntrySchema } },
    },
    async (request, reply) => {
      const { sku, customer, ...channels } = pick(bodyObject(request), [
        'sku',
        'customer',
        'email',
        'webPush',
        'webhook',
      ]);
      return reply
        .status(201)
        .send(await dibs.sales.wish(request.tenant.sku(sku), customer as string, channels as never));
    },
  );
  route(
    app,
    {
      method: 'GET',
      url: '/v1/wishlist/:sku',
      scope: 'sales:read',
      tag: 'Wishlist',
      summary: 'Who waits for this SKU',
      query: S.pageQuerySchema,
      responses: { 200: { description: 'A page of entries', schema: S.page(S.wishlistEntrySchema, 'WishlistPage') } },
    },
    async (request) => {
      const page = await dibs.sales.wishlist(request.tenant.sku(request.params.sku), pageQuery(request));
      return { data: page.items, nextCursor: page.nextCursor };
    },
  );
  route(
    app,
    {
      method: 'DELETE',
      url: '/v1/wishlist/:sku/:customer',
      scope: 'sales:buy',
      tag: 'Wishlist',
      summary: 'Leave the wishlist',
      responses: { 204: { description: 'Removed' } },
    },
    async (request, reply) => {
      await dibs.sales.unwish(request.tenant.sku(request.params.sku), request.params.customer!);
      return reply.status(204).send();
    },
  );
}
