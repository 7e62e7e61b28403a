/** `/v1/pools/:pool/forecast`, `/v1/sales/:sale/forecast`: burn rate, time to empty, predicted-empty alerts. */
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../context.js';
import { bodyObject, notFoundBeforeBadInput, pick } from '../http-input.js';
import * as S from '../api-schemas.js';
import { route } from '../routing.js';

const tag = 'Forecasts';

export function forecastRoutes(app: FastifyInstance, { dibs }: ServiceContext): void {
  route(
    app,
    {
      method: 'GET',
      url: '/v1/pools/:pool/forecast',
      scope: 'pools:read',
      tag,
      summary: 'Claims per minute (1/5/15 min), time to empty',
      responses: { 200: { description: 'The forecast', schema: S.forecastSchema } },
    },
    async (request) => dibs.forecasts.pool(request.tenant.pool(request.params.pool)),
  );
  route(
    app,
    {
      method: 'GET',
      url: '/v1/sales/:sale/forecast',
      scope: 'sales:read',
      tag,
      summary: 'Units ordered per minute, time to empty (held units count as gone)',
      responses: { 200: { description: 'The forecast', schema: S.forecastSchema } },
    },
    async (request) => dibs.forecasts.sale(request.tenant.sale(request.params.sale)),
  );

  // { withinMs: 600000 } records `<kind>.empty_soon` once per crossing; { withinMs: null } stops.
  route(
    app,
    {
      method: 'PUT',
      url: '/v1/pools/:pool/forecast/alert',
      scope: 'pools:admin',
      tag,
      summary: 'Alert (outbox event) when the pool is predicted empty within withinMs',
      body: S.forecastAlertBodySchema,
      responses: { 204: { description: 'Watching (or stopped)' } },
    },
    async (request, reply) => {
      const pool = request.tenant.pool(request.params.pool);
      await notFoundBeforeBadInput(
        () => dibs.pools.get(pool),
        () =>
          dibs.forecasts.watchPool(pool, (pick(bodyObject(request), ['withinMs']).withinMs ?? null) as number | null),
      );
      return reply.status(204).send();
    },
  );
  route(
    app,
    {
      method: 'PUT',
      url: '/v1/sales/:sale/forecast/alert',
      scope: 'sales:admin',
      tag,
      summary: 'Alert (outbox event) when the sale is predicted sold out within withinMs',
      body: S.forecastAlertBodySchema,
      responses: { 204: { description: 'Watching (or stopped)' } },
    },
    async (request, reply) => {
      const sale = request.tenant.sale(request.params.sale);
      await notFoundBeforeBadInput(
        () => dibs.sales.get(sale),
        () =>
          dibs.forecasts.watchSale(sale, (pick(bodyObject(request), ['withinMs']).withinMs ?? null) as number | null),
      );
      return reply.status(204).send();
    },
  );
}
