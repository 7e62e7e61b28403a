/** `/v1/locks/:key…` and `/v1/counters/:name`: leases, semaphores and sharded counters over HTTP. */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Dibs } from '../../core/dibs.js';
import { DibsError } from '../../core/errors.js';
import { bodyObject, pick } from '../http-input.js';

type KeyParams = { key: string };

/** Aborts when the client goes away before the answer is sent, so a waiting acquire stops waiting. */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

const optionalBody = (body: unknown) => (body === undefined || body === null ? {} : (body as Record<string, unknown>));
const token = (body: Record<string, unknown>) => {
  if (typeof body.token !== 'string') throw new DibsError('invalid_input', 'token: required, the token of the lease', { field: 'token' });
  return body.token;
};

export function lockRoutes(app: FastifyInstance, dibs: Dibs): void {
  app.post<{ Params: KeyParams }>('/v1/locks/:key/acquire', async (request, reply) => {
    const body = pick(optionalBody(request.body), ['ttlMs', 'waitMs', 'limit']);
    const lease = await dibs.semaphores.acquire(request.params.key, (body.limit ?? 1) as number, {
      ...(body.ttlMs !== undefined ? { ttlMs: body.ttlMs as number } : {}),
      ...(body.waitMs !== undefined ? { waitMs: body.waitMs as number } : {}),
      signal: clientGone(reply),
    });
    return reply.status(201).send(lease);
  });

  app.post<{ Params: KeyParams }>('/v1/locks/:key/renew', async (request) => {
    const body = pick(bodyObject(request), ['token', 'ttlMs', 'limit']);
    return dibs.semaphores.renew({ key: request.params.key, token: token(body), limit: (body.limit ?? 1) as number } as never, body.ttlMs !== undefined ? { ttlMs: body.ttlMs as number } : {});
  });

  app.post<{ Params: KeyParams }>('/v1/locks/:key/release', async (request, reply) => {
    const body = pick(bodyObject(request), ['token']);
    await dibs.semaphores.release({ key: request.params.key, token: token(body) } as never);
    return reply.status(204).send();
  });

  app.get<{ Params: KeyParams }>('/v1/locks/:key', async (request) => dibs.semaphores.inspect(request.params.key));

  app.get<{ Params: { name: string } }>('/v1/counters/:name', async (request) => dibs.counters.get(request.params.name));
  app.post<{ Params: { name: string } }>('/v1/counters/:name', async (request) => {
    const body = pick(optionalBody(request.body), ['by']);
    return dibs.counters.incr(request.params.name, (body.by ?? 1) as number);
  });
  app.delete<{ Params: { name: string } }>('/v1/counters/:name', async (request, reply) => {
    await dibs.counters.reset(request.params.name);
    return reply.status(204).send();
  });
}
