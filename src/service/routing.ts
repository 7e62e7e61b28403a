/**
 * One way to declare a route: method, path, the scope it needs and its documentation (zod schemas
 * for body, query and answer). The same declaration registers the Fastify route, tells the auth
 * hook what to require, and feeds the OpenAPI document — so the docs cannot drift from the routes.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { Principal, Scope } from './auth/keys.js';
import type { Tenant } from './auth/tenant.js';
import type { Tag } from './tags.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RouteDoc {
  method: Method;
  /** Fastify path (`/v1/pools/:pool`). */
  url: string;
  /** Scope needed; `public` routes need no key. */
  scope: Scope | 'public' | 'any';
  tag: Tag;
  summary: string;
  description?: string;
  body?: z.ZodType;
  /** Also accepts text/csv (streamed). */
  csv?: boolean;
  query?: z.ZodType;
  /** Success answers by status; `schema` omitted = no body (204) or free-form. */
  responses: Record<number, { description: string; schema?: z.ZodType; contentType?: string }>;
  /** Honours the Idempotency-Key header (every mutating /v1 route does). */
  idempotent?: boolean;
  /** Opt out of rate limiting (health checks, docs). */
  noRateLimit?: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    doc?: RouteDoc;
  }
  interface FastifyRequest {
    principal: Principal | null;
    tenant: Tenant;
  }
  interface FastifyInstance {
    routeDocs: RouteDoc[];
  }
}

export type Handler = (
  request: FastifyRequest<{ Params: Record<string, string> }>,
  reply: FastifyReply,
) => Promise<unknown>;

export function route(
  app: FastifyInstance,
  doc: Omit<RouteDoc, 'idempotent'> & { idempotent?: boolean },
  handler: Handler,
): void {
  const full: RouteDoc = { ...doc, idempotent: doc.idempotent ?? (doc.method !== 'GET' && doc.url.startsWith('/v1/')) };
  app.routeDocs.push(full);
  app.route({
    method: full.method,
    url: full.url,
    config: { doc: full, ...(full.noRateLimit ? { rateLimit: false } : {}) } as never,
    handler: handler as never,
  });
}
