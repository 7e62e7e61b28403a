import { z } from 'zod';
import { namespaced } from '../schemas.js';
import { localLockKeySchema } from '../locks/schemas.js';

/** Limit names: like pool names (letters, digits, . _ -). */
export const localLimitNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'use letters, digits, ".", "_" or "-", starting with a letter or digit')
  .max(100);
export const limitNameSchema = namespaced(localLimitNameSchema, 100);
/** The key a limit counts separately (a user, an API key, '' for one global bucket). */
export const limitKeySchema = z.union([z.literal(''), localLockKeySchema]);
export const takeCountSchema = z.number().int().min(1).max(1_000_000_000);
export const limitAlgorithmSchema = z.enum(['token-bucket', 'sliding-window', 'quota']);

const fields = {
  algorithm: limitAlgorithmSchema,
  limit: z.number().int().min(1).max(1_000_000_000),
  /** 1 ms … 366 days. */
  periodMs: z
    .number()
    .int()
    .min(1)
    .max(366 * 24 * 3600_000),
  burst: z.number().int().min(1).max(1_000_000_000),
  segments: z.number().int().min(1).max(60),
};

export const limitInputSchema = z
  .object({ name: limitNameSchema, ...fields, burst: fields.burst.optional(), segments: fields.segments.optional() })
  .strict();
export const limitUpdateSchema = z
  .object({
    algorithm: fields.algorithm.optional(),
    limit: fields.limit.optional(),
    periodMs: fields.periodMs.optional(),
    burst: fields.burst.optional(),
    segments: fields.segments.optional(),
  })
  .strict();

export const takeOptionsSchema = z.object({ key: limitKeySchema.default('') }).strict();
export const waitOptionsSchema = z
  .object({
    key: limitKeySchema.default(''),
    /** Longest wait before `rate_limited` (default: as long as it takes, up to a day). */
    waitMs: z
      .number()
      .int()
      .min(0)
      .max(24 * 3600_000)
      .default(24 * 3600_000),
    signal: z.instanceof(AbortSignal).optional(),
  })
  .strict();
