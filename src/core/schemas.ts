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

/**
 * codeSchema's rules without zod, for an import's per-code loop (a zod parse per code was a third
 * of the Node side of a 1M-code import): the trimmed code, or null when it breaks a rule and the
 * schema must word why. Kept beside codeSchema so the two change together.
 */
export function plainCode(raw: string): string | null {
  const code = raw.trim();
  return code.length > 0 && code.length <= LIMITS.code && !CONTROL_CHARS.test(code) ? code : null;
}

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

export const listOptionsSchema = z
  .object({
    limit: z.number().int().min(1).max(LIMITS.pageSize).default(100),
    after: z.string().max(1024).optional(),
  })
  .strict();
