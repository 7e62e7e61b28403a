/** An in-process service (Fastify inject) over a temp SQLite store, with API keys made on demand. */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import assert from 'node:assert/strict';
import type { Dibs } from '../../src/index.js';
import { buildServer, type ServerOptions } from '../../src/service/app.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { OpenApiContract } from './openapi-contract.js';
import { openTempSqlite } from './sqlite.js';

export interface TestService {
  app: FastifyInstance;
  dibs: Dibs;
  store: string;
  /** A new key of `tenant` with `scopes`; returns the `authorization` header value. */
  key(tenant: string, scopes: string[]): Promise<string>;
  /** A JSON request; `auth` is an authorization header value (or none). */
  call(
    auth: string | null,
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<LightMyRequestResponse>;
  /** The service's OpenAPI document as a checker (see openapi-contract.ts). */
  contract: OpenApiContract;
  close(): Promise<void>;
}

/**
 * Every answer to `call` is checked against the service's own OpenAPI document (documented
 * status, body matching its schema): the whole service suite doubles as a contract test.
 */
export async function openTestService(options: Partial<Omit<ServerOptions, 'dibs'>> = {}): Promise<TestService> {
  const env = await openTempSqlite();
  const app = buildServer({ dibs: env.dibs, rateLimit: false, ...options });
  await app.ready();
  const contract = await contractOf(app);
  return {
    app,
    dibs: env.dibs,
    store: env.store,
    contract,
    key: async (tenant, scopes) =>
      `Bearer ${(await createApiKey(env.dibs.backend.service, { tenant, name: `test ${tenant}`, scopes })).key}`,
    call: async (auth, method, url, body, headers = {}) => {
      const res = await app.inject({
        method,
        url,
        headers: {
          ...(auth ? { authorization: auth } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
      });
      assertKeepsContract(contract, method, url, res);
      return res;
    },
    close: async () => {
      await app.close();
      await env.cleanup();
    },
  };
}

/** Asserts the error shape `{ error: { code, message, field? } }` and returns the error. */
export function errorOf(
  res: LightMyRequestResponse,
  status?: number,
  code?: string,
): { code: string; message: string; field?: string } {
  if (status !== undefined) assert.equal(res.statusCode, status, `${res.statusCode} ${res.body}`);
  const body = res.json() as { error?: { code?: unknown; message?: unknown; field?: unknown } };
  assert.equal(typeof body.error?.code, 'string', res.body);
  assert.equal(typeof body.error?.message, 'string', res.body);
  if (body.error?.field !== undefined) assert.equal(typeof body.error.field, 'string', res.body);
  if (code !== undefined) assert.equal(body.error!.code, code, res.body);
  return body.error as { code: string; message: string; field?: string };
}

/** The contract of a built service, from its own `/openapi.json`. */
export async function contractOf(app: FastifyInstance): Promise<OpenApiContract> {
  return new OpenApiContract((await app.inject({ method: 'GET', url: '/openapi.json' })).json());
}

/** Fails when an answer breaks the OpenAPI contract (undocumented status, body off its schema). */
export function assertKeepsContract(
  contract: OpenApiContract,
  method: string,
  url: string,
  res: LightMyRequestResponse,
): void {
  const problems = contract.check(
    method,
    url,
    res.statusCode,
    res.headers['content-type'] as string | undefined,
    res.body,
  );
  assert.deepEqual(problems, [], `the answer breaks the OpenAPI document: ${problems.join('; ')}`);
}
