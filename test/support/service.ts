/** An in-process service (Fastify inject) over a temp SQLite store, with API keys made on demand. */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import assert from 'node:assert/strict';
import type { Dibs } from '../../src/index.js';
import { buildServer, type ServerOptions } from '../../src/service/app.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { openTempSqlite } from './sqlite.js';

export interface TestService {
  app: FastifyInstance;
  dibs: Dibs;
  store: string;
  /** A new key of `tenant` with `scopes`; returns the `authorization` header value. */
  key(tenant: string, scopes: string[]): Promise<string>;
  /** A JSON request; `auth` is an authorization header value (or none). */
  call(auth: string | null, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, body?: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export async function openTestService(options: Partial<Omit<ServerOptions, 'dibs'>> = {}): Promise<TestService> {
  const env = await openTempSqlite();
  const app = buildServer({ dibs: env.dibs, rateLimit: false, ...options });
  await app.ready();
  return {
    app,
    dibs: env.dibs,
    store: env.store,
    key: async (tenant, scopes) => `Bearer ${(await createApiKey(env.dibs.backend.service!, { tenant, name: `test ${tenant}`, scopes })).key}`,
    call: (auth, method, url, body, headers = {}) =>
      app.inject({
        method,
        url,
        headers: { ...(auth ? { authorization: auth } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      }),
    close: async () => {
      await app.close();
      await env.cleanup();
    },
  };
}

/** Asserts the error shape `{ error: { code, message, field? } }` and returns the error. */
export function errorOf(res: LightMyRequestResponse, status?: number, code?: string): { code: string; message: string; field?: string } {
  if (status !== undefined) assert.equal(res.statusCode, status, `${res.statusCode} ${res.body}`);
  const body = res.json() as { error?: { code?: unknown; message?: unknown; field?: unknown } };
  assert.equal(typeof body.error?.code, 'string', res.body);
  assert.equal(typeof body.error?.message, 'string', res.body);
  if (body.error?.field !== undefined) assert.equal(typeof body.error.field, 'string', res.body);
  if (code !== undefined) assert.equal(body.error!.code, code, res.body);
  return body.error as { code: string; message: string; field?: string };
}
