/** Input schemas of coupon pools: what `dibs.pools.*`, the HTTP API and the CLI accept (see ../schemas.ts). */
import { z } from 'zod';
import { codeSchema, idempotencyKeySchema, LIMITS, metadataSchema, poolNameSchema } from '../schemas.js';

const perClaimantLimitSchema = z
  .number({ error: 'must be a number' })
  .int('must be a whole number')
  .min(1, 'must be at least 1')
  .max(LIMITS.perClaimantLimit, `at most ${LIMITS.perClaimantLimit}`);

const lowStockThresholdSchema = z
  .number({ error: 'must be a number' })
  .int('must be a whole number')
  .min(0, 'must not be negative')
  .nullable();

/** An instant as ISO 8601 with an offset, stored normalised to UTC with milliseconds. */
const instantSchema = z.iso
  .datetime({ offset: true, error: 'must be an ISO 8601 timestamp, e.g. 2026-11-27T09:00:00Z' })
  .transform((s) => new Date(s).toISOString());

const maxRedemptionsSchema = z
  .number({ error: 'must be a number' })
  .int('must be a whole number')
  .min(0, 'must be 0 or more')
  .max(1_000_000_000, 'at most 1000000000');
const maxRedemptionsPerClaimantSchema = z
  .number({ error: 'must be a number' })
  .int('must be a whole number')
  .min(1, 'must be 1 or more')
  .max(1_000_000, 'at most 1000000');

/** A code format's fields; its deeper rules (pattern placeholders, charset) are checked by generate.ts' codeShape. */
export const codeFormatSchema = z
  .object({
    length: z.number({ error: 'must be a number' }).int('must be a whole number').min(1).max(64).optional(),
    pattern: z.string({ error: 'must be a string' }).min(1).max(200).optional(),
    charset: z.string({ error: 'must be a string' }).min(2).max(256).default('alphanumeric'),
    prefix: z.string({ error: 'must be a string' }).max(32).default(''),
    suffix: z.string({ error: 'must be a string' }).max(32).default(''),
    checkChar: z.boolean({ error: 'must be true or false' }).default(false),
  })
  .strict();

const windowIsOrdered = (w: { startsAt?: string | null; expiresAt?: string | null }) =>
  !(w.startsAt && w.expiresAt && w.startsAt >= w.expiresAt);
const windowOrderError = { message: 'must be after startsAt', path: ['expiresAt'] };

export const createPoolSchema = z
  .object({
    name: poolNameSchema,
    perClaimantLimit: perClaimantLimitSchema.default(1),
    lowStockThreshold: lowStockThresholdSchema.default(null),
    metadata: metadataSchema.default({}),
    startsAt: instantSchema.nullable().default(null),
    expiresAt: instantSchema.nullable().default(null),
    maxRedemptions: maxRedemptionsSchema.nullable().default(null),
    maxRedemptionsPerClaimant: maxRedemptionsPerClaimantSchema.nullable().default(null),
    publicCodes: z.boolean({ error: 'must be true or false' }).default(false),
    codeFormat: codeFormatSchema.nullable().default(null),
  })
  .strict()
  .refine(windowIsOrdered, windowOrderError);

export const updatePoolSchema = z
  .object({
    perClaimantLimit: perClaimantLimitSchema.optional(),
    lowStockThreshold: lowStockThresholdSchema.optional(),
    metadata: metadataSchema.optional(),
    startsAt: instantSchema.nullable().optional(),
    expiresAt: instantSchema.nullable().optional(),
    maxRedemptions: maxRedemptionsSchema.nullable().optional(),
    maxRedemptionsPerClaimant: maxRedemptionsPerClaimantSchema.nullable().optional(),
    publicCodes: z.boolean({ error: 'must be true or false' }).optional(),
    codeFormat: codeFormatSchema.nullable().optional(),
  })
  .strict()
  .refine(windowIsOrdered, windowOrderError);

/** How long a checkout hold lasts: 1 s … 24 h. */
export const holdTtlSchema = z
  .number({ error: 'must be a number' })
  .int('must be a whole number')
  .min(1000, 'must be at least 1000 (1 s)')
  .max(86_400_000, 'at most 86400000 (24 h)');

const windowFields = {
  startsAt: instantSchema.nullable().default(null),
  expiresAt: instantSchema.nullable().default(null),
};

/** A code's own validity window. */
export const codeWindowSchema = z.object(windowFields).strict().refine(windowIsOrdered, windowOrderError);

/** An import entry with its own validity window (a bare string is a code without one). */
export const windowedCodeSchema = z
  .object({ code: codeSchema, ...windowFields })
  .strict()
  .refine(windowIsOrdered, windowOrderError);

/** One entry of an import list: a code, or `{code, startsAt?, expiresAt?}`. */
export const importEntrySchema = z.union([codeSchema, windowedCodeSchema]);

/** A multi-use code (one code, N uses). */
export const multiUseCodeSchema = z
  .object({
    code: z.lazy(() => codeSchema),
    uses: z
      .number({ error: 'must be a number' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(1_000_000_000, 'at most 1000000000'),
    usesPerClaimant: z
      .number({ error: 'must be a number' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(1_000_000, 'at most 1000000')
      .nullable()
      .default(1),
    ...windowFields,
  })
  .strict()
  .refine(windowIsOrdered, windowOrderError);

export const claimOptionsSchema = z.object({ idempotencyKey: idempotencyKeySchema.optional() }).strict();

export const claimCountSchema = z
  .number({ error: 'must be a number' })
  .int('must be a whole number')
  .min(1, 'must be at least 1')
  .max(LIMITS.claimMany, `at most ${LIMITS.claimMany}`);

export const codeStatusSchema = z.enum(['free', 'claimed', 'redeemed', 'revoked']);

export type CreatePoolInput = z.input<typeof createPoolSchema>;
export type UpdatePoolInput = z.input<typeof updatePoolSchema>;
export type CodeWindowInput = z.input<typeof codeWindowSchema>;
export type MultiUseCodeInput = z.input<typeof multiUseCodeSchema>;
