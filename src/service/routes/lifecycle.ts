/** `/v1/pools/:pool/generate`: unique random codes from a pattern, generated into the pool. */
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../context.js';
import { bodyObject, notFoundBeforeBadInput } from '../http-input.js';
import * as S from '../api-schemas.js';
import { route } from '../routing.js';

export function lifecycleRoutes(app: FastifyInstance, { dibs }: ServiceContext): void {
  // { count, length | pattern, charset?, prefix?, suffix?, checkChar? } → { generated, collisions }
  route(
    app,
    {
      method: 'POST',
      url: '/v1/pools/:pool/generate',
      scope: 'pools:admin',
      tag: 'Pools',
      summary: 'Generate unique random codes into the pool (pattern, charset, check character)',
      body: S.generateBodySchema,
      responses: { 201: { description: 'How many codes were generated', schema: S.generateResultSchema } },
    },
    async (request, reply) => {
      const pool = request.tenant.pool(request.params.pool);
      return reply.status(201).send(
        await notFoundBeforeBadInput(
          () => dibs.pools.get(pool),
          () => dibs.pools.generate(pool, bodyObject(request) as never),
        ),
      );
    },
  );
}
