/**
 * The OpenAPI 3.1 document, generated from the route declarations (routing.ts) and their zod
 * schemas (z.toJSONSchema; JSON Schema 2020-12 is OpenAPI 3.1's own dialect). Named schemas
 * (`.meta({ id })`) become components; everything else is inlined.
 */
import { z } from 'zod';
import { SCOPES } from './auth/keys.js';
import { errorSchema } from './api-schemas.js';
import type { RouteDoc } from './routing.js';
import { TAGS } from './tags.js';

type Json = Record<string, unknown>;

export function buildOpenApi(routes: readonly RouteDoc[], version: string): Json {
  const components: Record<string, unknown> = {};
  const schema = (s: z.ZodType, io: 'input' | 'output'): Json => {
    const json = z.toJSONSchema(s, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as Json;
    const defs = (json.$defs ?? {}) as Record<string, Json>;
    delete json.$defs;
    delete json.$schema;
    for (const [id, def] of Object.entries(defs)) components[id] ??= relink(def);
    const id = (z.globalRegistry.get(s) as { id?: string } | undefined)?.id;
    if (id) {
      components[id] ??= relink(json);
      return { $ref: `#/components/schemas/${id}` };
    }
    return relink(json) as Json;
  };

  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const path = r.url.replace(/:(\w+)/g, '{$1}');
    const params: Json[] = [...r.url.matchAll(/:(\w+)/g)].map((m) => ({
      name: m[1],
      in: 'path',
      required: true,
      schema: { type: 'string' },
    }));
    if (r.query) {
      const q = schema(r.query, 'input');
      for (const [name, prop] of Object.entries((q.properties ?? {}) as Record<string, Json>)) {
        params.push({
          name,
          in: 'query',
          required: ((q.required ?? []) as string[]).includes(name),
          schema: prop,
          ...(prop.description ? { description: prop.description } : {}),
        });
      }
    }
    if (r.idempotent) {
      params.push({
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        schema: { type: 'string', maxLength: 255 },
        description:
          'Retry safely: the same key with the same request replays the stored answer (header Idempotent-Replayed: true); with a different request → 409 idempotency_key_reused; while the first is running → 409 idempotency_key_in_use. Kept 24 h, per API key.',
      });
    }
    const responses: Record<string, unknown> = {};
    for (const [status, res] of Object.entries(r.responses)) {
      responses[status] = {
        description: res.description,
        ...(res.schema
          ? { content: { 'application/json': { schema: schema(res.schema, 'output') } } }
          : res.contentType
            ? { content: { [res.contentType]: { schema: { type: 'string' } } } }
            : {}),
      };
    }
    for (const status of errorStatuses(r)) responses[status] ??= { $ref: `#/components/responses/E${status}` };
    const operation: Json = {
      tags: [r.tag],
      summary: r.summary,
      operationId: `${r.method.toLowerCase()}${path
        .replace(/[{}]/g, '')
        .split(/[/_.-]/)
        .filter(Boolean)
        .map((p) => p[0]!.toUpperCase() + p.slice(1))
        .join('')}`,
      description: [
        r.description,
        r.scope === 'public'
          ? 'No API key needed.'
          : r.scope === 'any'
            ? 'Any valid API key.'
            : `Scope: \`${r.scope}\`.`,
      ]
        .filter(Boolean)
        .join('\n\n'),
      ...(r.scope === 'public' ? { security: [] } : { 'x-scope': r.scope }),
      ...(params.length ? { parameters: params } : {}),
      ...(r.body
        ? {
            requestBody: {
              required: true,
              content: {
                'application/json': { schema: schema(r.body, 'input') },
                ...(r.csv
                  ? {
                      'text/csv': {
                        schema: {
                          type: 'string',
                          description: 'One code per line, or a CSV with a `code` column; streamed',
                        },
                      },
                    }
                  : {}),
              },
            },
          }
        : {}),
      responses,
    };
    (paths[path] ??= {})[r.method.toLowerCase()] = operation;
  }

  const errorResponse = (description: string) => ({
    description,
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  });
  schema(errorSchema, 'output');
  return {
    openapi: '3.1.0',
    info: {
      title: 'dibs API',
      version,
      license: { name: 'MIT', identifier: 'MIT' },
      description: [
        'Hand out scarce things exactly once: coupon pools, flash sales, locks and counters.',
        "**Auth**: `Authorization: Bearer dibs_…` (create keys with `dibs keys create`). Every key belongs to a tenant and sees only that tenant's pools, sales, locks and counters. No key → 401, missing scope → 403, another tenant's object → 404.",
        `**Scopes**: ${SCOPES.map((s) => `\`${s}\``).join(', ')}; \`<family>:*\` and \`<family>:admin\` grant the whole family, \`admin\` grants everything.`,
        '**Errors** always look like `{"error": {"code", "message", "field?", "details?"}}`; branch on `code`.',
        '**Pagination**: list endpoints take `limit` (1–1000, default 100) and `after`, and answer `{"data": [...], "nextCursor": string|null}`; pass `nextCursor` as `after` for the next page.',
        '**Rate limits**: per API key; over the limit → 429 `rate_limited` with `Retry-After` (seconds) and `x-ratelimit-*` headers.',
        '**Request ids**: send `X-Request-Id` or get one generated; it is echoed and logged.',
      ].join('\n\n'),
    },
    servers: [{ url: '/' }],
    security: [{ apiKey: [] }],
    tags: [...new Set(routes.map((r) => r.tag))].map((name) => ({ name, description: TAGS[name] })),
    paths,
    components: {
      securitySchemes: { apiKey: { type: 'http', scheme: 'bearer', bearerFormat: 'dibs_<id>_<secret>' } },
      schemas: components,
      responses: {
        E400: errorResponse('Invalid input (`invalid_input`, with `field`)'),
        E401: errorResponse('No or invalid API key (`unauthorized`)'),
        E403: errorResponse('The key lacks the scope (`forbidden`)'),
        E404: errorResponse('No such object in this tenant (`not_found`)'),
        E409: errorResponse(
          'Conflict: a rule said no (`sold_out`, `limit_reached`, `already_exists`, `idempotency_key_reused`, …)',
        ),
        E413: errorResponse('The body is larger than the service takes (`payload_too_large`; `bodyLimit`)'),
        E415: errorResponse(
          "The body's content type is not taken (`unsupported_media_type`): send `application/json` (or `text/csv` where documented)",
        ),
        E429: errorResponse('Rate limited (`rate_limited`); see Retry-After'),
        E503: errorResponse(
          'The store is unreachable, or this instance is shutting down (`unavailable`, retriable); see Retry-After',
        ),
      },
    },
  };
}

/**
 * The error answers a route can give, checked by the contract test (every answer of the service
 * suite and of the fuzz test must be documented): any URL can be malformed (400); a key can lack
 * the scope, name something of no tenant of its own — in the path, the query or the body — or be
 * over its rate; a write can conflict, carry a body too large or of a type not taken; and the
 * store can be unreachable, or the service shutting down (503).
 */
function errorStatuses(r: RouteDoc): number[] {
  if (r.scope === 'public') return [400, ...(r.url.includes(':') ? [404] : [])];
  return [400, 401, 403, 404, ...(r.method !== 'GET' ? [409, 413, 415] : []), 429, 503];
}

/** `#/$defs/X` → `#/components/schemas/X`, recursively. */
function relink(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(relink);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [
        k,
        k === '$ref' && typeof v === 'string' ? v.replace('#/$defs/', '#/components/schemas/') : relink(v),
      ]),
    );
  }
  return value;
}
