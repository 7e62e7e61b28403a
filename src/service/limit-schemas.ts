/**
 * Request bodies and answers of `/v1/limits` (rate limits and quotas). The request schemas reuse
 * the core ones (core/limits/schemas.ts); the answer schemas describe the wire for openapi.ts.
 */
import { z } from 'zod';
import {
  limitAlgorithmSchema,
  limitKeySchema,
  limitUpdateSchema,
  localLimitNameSchema,
  takeCountSchema,
} from '../core/limits/schemas.js';

const timestamp = z.string().meta({ format: 'date-time' });

export const limitCreateBodySchema = z
  .object({
    name: localLimitNameSchema,
    algorithm: limitAlgorithmSchema.meta({
      description:
        '`token-bucket` (GCRA: `limit` per `periodMs`, bursts up to `burst`), `sliding-window` (at most `limit` in every `periodMs`), `quota` (at most `limit` per calendar period of `periodMs`, aligned to the Unix epoch)',
    }),
    limit: z.number().int().min(1).max(1_000_000_000),
    periodMs: z
      .number()
      .int()
      .min(1)
      .max(366 * 24 * 3600_000),
    burst: z
      .number()
      .int()
      .min(1)
      .max(1_000_000_000)
      .optional()
      .meta({ description: 'token-bucket only (default `limit`)' }),
    segments: z
      .number()
      .int()
      .min(1)
      .max(60)
      .optional()
      .meta({ description: 'sliding-window only: buckets per period (default 10; `periodMs` must be a multiple)' }),
  })
  .strict();
export const limitUpdateBodySchema = limitUpdateSchema;

export const limitSchema = z
  .object({
    name: z.string(),
    algorithm: limitAlgorithmSchema,
    limit: z.number().int(),
    periodMs: z.number().int(),
    burst: z.number().int(),
    segments: z.number().int(),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Limit' });
export const limitListSchema = z.object({ data: z.array(limitSchema) }).meta({ id: 'LimitList' });

export const takeBodySchema = z
  .object({
    key: limitKeySchema.optional().meta({
      description: 'What the limit counts separately (a user, an API key); default `""`: one shared allowance',
    }),
    n: takeCountSchema.optional().meta({ description: 'Units to take at once (default 1)' }),
  })
  .strict();
export const peekQuerySchema = z.object({
  key: z.string().optional().meta({ description: 'The key whose allowance to read; default `""`: the shared one' }),
  n: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000_000_000)
    .optional()
    .meta({ description: 'Units asked about (default 1)' }),
});
export const waitBodySchema = takeBodySchema
  .extend({
    waitMs: z
      .number()
      .int()
      .min(0)
      .max(60_000)
      .meta({ description: 'Longest wait for the admission (ms); then 429 `rate_limited`' }),
  })
  .strict();
export const resetBodySchema = z.object({ key: limitKeySchema.optional() }).strict();

export const limitDecisionSchema = z
  .union([
    z.object({
      allowed: z.literal(true),
      remaining: z.number().int().meta({ description: 'Units that could still be taken now' }),
      at: z.number().meta({ description: 'The store clock of the decision (Unix ms)' }),
    }),
    z.object({
      allowed: z.literal(false),
      retryAfterMs: z
        .number()
        .int()
        .meta({ description: 'Exact wait until `n` would be admitted if nobody else takes meanwhile' }),
      remaining: z.number().int(),
      at: z.number(),
    }),
  ])
  .meta({ id: 'LimitDecision' });
