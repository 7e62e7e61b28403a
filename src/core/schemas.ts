/**
 * Input schemas: the single source of truth for what the library, the HTTP API and the CLI
 * accept. Backends receive only values that passed these.
 */
import { z } from 'zod';

// No C0/C1 control characters: they break CSV exports, logs and terminals.
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;

export const LIMITS = {
  poolName: 64,
  claimant: 256,
  code: 128,
  idempotencyKey: 255,
  perClaimantLimit: 1000,
  claimMany: 1000,
  metadataBytes: 16 * 1024,
  pageSize: 1000,
} as const;

/**
 * Tenant namespaces. The HTTP service keeps tenants apart by storing a tenant's objects under
 * `<tenant>~<name>`. A tenant id never contains `~` and the service refuses `~` in every name a
 * user gives it, so the split is unambiguous and one tenant's names can never collide with
 * another's. The core accepts an optional namespace prefix and checks the rest by the usual rule.
 */
export const TENANT_SEPARATOR = '~';
export const tenantIdSchema = z
  .string({ error: 'must be a string' })
  .regex(
    /^[a-z0-9][a-z0-9_-]{0,31}$/,
    'use 1–32 lower-case letters, digits, "_" or "-", starting with a letter or digit',
  );
const TENANT_PREFIX = /^[a-z0-9][a-z0-9_-]{0,31}~/;
/** Longest namespace prefix (`<tenant>~`). */
export const TENANT_PREFIX_MAX = 33;

/** The name without its tenant namespace (`acme~spring` → `spring`). */
export function localName(name: string): string {
  const prefix = TENANT_PREFIX.exec(name);
  return prefix ? name.slice(prefix[0].length) : name;
}

/** `local` applied to the part after an optional `<tenant>~` prefix, with its own messages. */
export function namespaced(local: z.ZodType<string>, maxLocal: number): z.ZodType<string> {
  return z
    .string({ error: 'must be a string' })
    .max(maxLocal + TENANT_PREFIX_MAX, `at most ${maxLocal} characters`)
    .superRefine((value, ctx) => {
      const result = local.safeParse(localName(value));
      if (!result.success) ctx.addIssue({ code: 'custom', message: result.error.issues[0]!.message });
    });
}

/** A pool (or sale) name as a user writes it: no namespace. */
export const localPoolNameSchema = z
  .string({ error: 'must be a string' })
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'use letters, digits, ".", "_" or "-", starting with a letter or digit')
  .max(LIMITS.poolName, `at most ${LIMITS.poolName} characters`);

export const poolNameSchema = namespaced(localPoolNameSchema, LIMITS.poolName);

export const claimantSchema = z
  .string({ error: 'must be a string' })
  .min(1, 'must not be empty')
  .max(LIMITS.claimant, `at most ${LIMITS.claimant} characters`)
  .refine((s) => s.trim().length > 0, 'must not be blank')
  .refine((s) => !CONTROL_CHARS.test(s), 'must not contain control characters');

export const codeSchema = z
  .string({ error: 'must be a string' })
  .trim()
  .min(1, 'must not be blank')
  .max(LIMITS.code, `at most ${LIMITS.code} characters`)
  .refine((s) => !CONTROL_CHARS.test(s), 'must not contain control characters');

/** An order id named at checkout (redeem/unredeem): the same rules as an idempotency key. */
export const orderIdSchema = z.lazy(() => idempotencyKeySchema);

export const idempotencyKeySchema = z
  .string({ error: 'must be a string' })
  .min(1, 'must not be empty')
  .max(LIMITS.idempotencyKey, `at most ${LIMITS.idempotencyKey} characters`)
  .refine((s) => !CONTROL_CHARS.test(s), 'must not contain control characters');

export const metadataSchema = z
  .record(z.string(), z.unknown())
  .refine((m) => JSON.stringify(m).length <= LIMITS.metadataBytes, `at most ${LIMITS.metadataBytes} bytes as JSON`);

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

export const listOptionsSchema = z
  .object({
    limit: z.number().int().min(1).max(LIMITS.pageSize).default(100),
    after: z.string().max(1024).optional(),
  })
  .strict();

export type CreatePoolInput = z.input<typeof createPoolSchema>;
export type UpdatePoolInput = z.input<typeof updatePoolSchema>;
export type CodeWindowInput = z.input<typeof codeWindowSchema>;
export type MultiUseCodeInput = z.input<typeof multiUseCodeSchema>;
