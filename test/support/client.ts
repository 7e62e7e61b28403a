/**
 * The service listening on a loopback port over a given Dibs (real HTTP, real store), an admin key
 * of the default tenant, and a `dibs/client` pointed at it.
 */
import type { FastifyInstance } from 'fastify';
import type { Dibs } from '../../src/index.js';
import { createClient, type ClientOptions, type DibsClient } from '../../src/client/index.js';
import { buildServer } from '../../src/service/app.js';
import { createApiKey } from '../../src/service/auth/keys.js';

export interface ServedDibs {
  app: FastifyInstance;
  baseUrl: string;
  apiKey: string;
  client(options?: Partial<ClientOptions>): DibsClient;
  close(): Promise<void>;
}

export async function serveOverHttp(dibs: Dibs): Promise<ServedDibs> {
  const app = buildServer({ dibs, rateLimit: false, logger: false });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  const baseUrl = `http://127.0.0.1:${port}`;
  const apiKey = (await createApiKey(dibs.backend.service, { name: 'client tests', scopes: ['admin'] })).key;
  return {
    app,
    baseUrl,
    apiKey,
    client: (options = {}) => createClient({ baseUrl, apiKey, ...options }),
    close: () => app.close(),
  };
}
