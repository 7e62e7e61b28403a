/** `/v1/me` (who am I) and `/v1/keys` (an admin manages its own tenant's keys). */
import type { FastifyInstance } from 'fastify';
import { DibsError, notFound } from '../../core/errors.js';
import * as S from '../api-schemas.js';
import { createApiKey, publicKey } from '../auth/keys.js';
import type { ServiceContext } from '../context.js';
import { bodyObject, pick } from '../http-input.js';
import { route } from '../routing.js';

const tag = 'Keys';

export function keyRoutes(app: FastifyInstance, { store, verifier }: ServiceContext): void {
  route(
    app,
    {
      method: 'GET',
      url: '/v1/me',
      scope: 'any',
      tag,
      summary: 'The calling key: id, tenant, scopes',
      responses: { 200: { description: 'The key', schema: S.meSchema } },
    },
    async (request) => ({ ...request.principal! }),
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/keys',
      scope: 'admin',
      tag,
      summary: 'API keys of this tenant (never the keys themselves)',
      responses: { 200: { description: 'Keys', schema: S.page(S.keySchema, 'KeyPage') } },
    },
    async (request) => ({ data: (await store.listKeys(request.principal!.tenant)).map(publicKey), nextCursor: null }),
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/keys',
      scope: 'admin',
      tag,
      summary: 'Create an API key in this tenant (the answer is the only time the key is shown)',
      body: S.createKeyBodySchema,
      responses: { 201: { description: 'The key', schema: S.createdKeySchema } },
    },
    async (request, reply) => {
      const body = pick(bodyObject(request), ['name', 'scopes']);
      const created = await createApiKey(store, {
        tenant: request.principal!.tenant,
        name: body.name as string,
        scopes: body.scopes as string[],
      });
      return reply.status(201).header('cache-control', 'no-store').send({ key: created.key, apiKey: created.record });
    },
  );

  route(
    app,
    {
      method: 'DELETE',
      url: '/v1/keys/:id',
      scope: 'admin',
      tag,
      summary: 'Revoke an API key of this tenant',
      responses: { 200: { description: 'The revoked key', schema: S.keySchema } },
    },
    async (request) => {
      const id = request.params.id!;
      if (!/^[a-f0-9]{16}$/.test(id)) throw new DibsError('invalid_input', 'id: not an API key id', { field: 'id' });
      const existing = await store.getKey(id);
      if (!existing || existing.tenant !== request.principal!.tenant) throw notFound('key', id);
      const revoked = await store.revokeKey(id);
      verifier.forget(id);
      return publicKey(revoked!);
    },
  );
}
