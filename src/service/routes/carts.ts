/** `/v1/carts…`: all-or-nothing carts over several sales, a thin shell over `dibs.sales` cart steps. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DibsError, notFound } from '../../core/errors.js';
import * as S from '../api-schemas.js';
import type { ServiceContext } from '../context.js';
import { bodyObject, idempotencyKey, pick } from '../http-input.js';
import { route } from '../routing.js';

const tag = 'Carts';
type Req = FastifyRequest<{ Params: Record<string, string> }>;

export function cartRoutes(app: FastifyInstance, { dibs, metrics }: ServiceContext): void {
  /** A cart whose every line is a sale of this tenant, or 404 (another tenant's cart does not exist for this one). */
  const ownCart = async (request: Req) => {
    const id = request.params.cart!;
    const cart = await dibs.sales.getCart(id);
    if (!cart.lines.every((l) => request.tenant.owns(l.saleId))) throw notFound('cart', id);
    return cart;
  };

  route(
    app,
    {
      method: 'POST',
      url: '/v1/carts',
      scope: 'sales:buy',
      tag,
      summary: 'Hold units of several sales at once: every line, or none',
      description:
        "Each line is judged as a reservation of its sale (window, per-customer limit, cap). The first line that fails fails the cart, and nothing is held: the error's `details.line` names it (0-based) and `field` is `lines.<n>…`. With an idempotency key a retry returns the original cart.",
      body: S.holdCartBodySchema,
      responses: { 201: { description: 'The cart', schema: S.cartResultSchema } },
    },
    async (request, reply) => {
      const body = pick(bodyObject(request), ['customer', 'lines', 'ttlMs', 'idempotencyKey']);
      const key = idempotencyKey(request, body.idempotencyKey);
      if (!Array.isArray(body.lines))
        throw new DibsError('invalid_input', 'lines: required, an array of {sale, quantity}', { field: 'lines' });
      const lines = (body.lines as { sale?: unknown }[]).map((line, i) =>
        line && typeof line === 'object' ? { ...line, sale: request.tenant.sale(line.sale, `lines.${i}.sale`) } : line,
      );
      const result = await metrics.claim(
        'cart',
        () =>
          dibs.sales.holdCart({
            customer: body.customer as string,
            lines: lines as never,
            ttlMs: body.ttlMs as number,
            ...(key === undefined ? {} : { idempotencyKey: key }),
          }),
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
      url: '/v1/carts/:cart',
      scope: 'sales:read',
      tag,
      summary: 'A cart, with its lines',
      responses: { 200: { description: 'The cart', schema: S.cartSchema } },
    },
    async (request) => ownCart(request),
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/carts/:cart/confirm',
      scope: 'sales:buy',
      tag,
      summary: 'Turn every line of a cart into an order, in one step',
      responses: {
        201: { description: 'The cart and its orders (one per line, in line order)', schema: S.cartOrdersSchema },
        200: { description: 'Already confirmed (replay): the same orders', schema: S.cartOrdersSchema },
      },
    },
    async (request, reply) => {
      await ownCart(request);
      const result = await dibs.sales.confirmCart(request.params.cart!);
      if (result.replayed) void reply.header('idempotent-replayed', 'true');
      return reply.status(result.replayed ? 200 : 201).send(result);
    },
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/carts/:cart/cancel',
      scope: 'sales:buy',
      tag,
      summary: 'Give every line of a cart back, in one step',
      responses: { 200: { description: 'The cart', schema: S.cartSchema } },
    },
    async (request) => {
      await ownCart(request);
      return dibs.sales.cancelCart(request.params.cart!);
    },
  );
}
