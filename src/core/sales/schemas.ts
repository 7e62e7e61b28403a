import { z } from 'zod';
import { claimantSchema, idempotencyKeySchema, metadataSchema, namespaced } from '../schemas.js';

export const SALE_LIMITS = {
  cap: 1_000_000_000,
  perCustomerLimit: 1_000_000,
  quantity: 10_000,
  /** Holds live between one second and one day. */
  ttlMs: { min: 1_000, max: 86_400_000 },
} as const;

export const localSaleIdSchema = z
  .string({ error: 'must be a string' })
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'use letters, digits, ".", "_" or "-", starting with a letter or digit')
  .max(64, 'at most 64 characters');
/** A sale id, optionally under a tenant namespace (`<tenant>~<id>`, see schemas.ts). */
export const saleIdSchema = namespaced(localSaleIdSchema, 64);
export const localSkuSchema = z
  .string({ error: 'must be a string' })
  .min(1, 'must not be empty')
  .max(128, 'at most 128 characters');
export const skuSchema = namespaced(localSkuSchema, 128);

const timestamp = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp, e.g. 2026-11-27T09:00:00Z' });
const cap = z
  .number({ error: 'must be a number' })
  .int('must be a whole number')
  .min(0, 'must not be negative')
  .max(SALE_LIMITS.cap)
  .nullable();
const perCustomerLimit = z
  .number({ error: 'must be a number' })
  .int('must be a whole number')
  .min(1, 'must be at least 1')
  .max(SALE_LIMITS.perCustomerLimit);

export const createSaleSchema = z
  .object({
    id: saleIdSchema.optional(),
    sku: skuSchema,
    startsAt: timestamp,
    endsAt: timestamp,
    cap: cap.default(null),
    perCustomerLimit: perCustomerLimit.default(1),
    metadata: metadataSchema.default({}),
  })
  .strict();

export const updateSaleSchema = z
  .object({
    startsAt: timestamp.optional(),
    endsAt: timestamp.optional(),
    cap: cap.optional(),
    perCustomerLimit: perCustomerLimit.optional(),
    metadata: metadataSchema.optional(),
  })
  .strict();

export const quantitySchema = z
  .number({ error: 'must be a number' })
  .int('must be a whole number')
  .min(1, 'must be at least 1')
  .max(SALE_LIMITS.quantity, `at most ${SALE_LIMITS.quantity}`);
export const ttlSchema = z
  .number({ error: 'must be a number' })
  .int('must be a whole number')
  .min(SALE_LIMITS.ttlMs.min, 'at least 1000 ms')
  .max(SALE_LIMITS.ttlMs.max, 'at most one day');
export const customerSchema = claimantSchema;
export const buyOptionsSchema = z.object({ idempotencyKey: idempotencyKeySchema.optional() }).strict();
export const holdIdSchema = z
  .string()
  .min(1)
  .max(64)
  .regex(/^hold_[A-Za-z0-9]+$/, 'is not a hold id');

export type CreateSaleInput = z.input<typeof createSaleSchema>;
export type UpdateSaleInput = z.input<typeof updateSaleSchema>;

const httpUrl = (protocols: RegExp) =>
  z
    .string()
    .max(2048, 'at most 2048 characters')
    .refine((value) => {
      try {
        return protocols.test(new URL(value).protocol);
      } catch {
        return false;
      }
    }, 'must be an absolute URL');

export const wishlistChannelsSchema = z
  .object({
    email: z.email('must be an email address').max(320).optional(),
    webPush: z
      .object({
        endpoint: httpUrl(/^https?:$/),
        keys: z.object({ p256dh: z.string().min(1).max(256), auth: z.string().min(1).max(256) }).strict(),
      })
      .strict()
      .optional(),
    webhook: httpUrl(/^https?:$/).optional(),
  })
  .strict()
  .refine(
    (c) => c.email !== undefined || c.webPush !== undefined || c.webhook !== undefined,
    'name at least one channel: email, webPush or webhook',
  );

/** Most lines in one cart: each is a locked sale row (or document) in the cart's one step. */
export const CART_MAX_LINES = 20;

export const cartIdSchema = z
  .string()
  .min(1)
  .max(64)
  .regex(/^cart_[A-Za-z0-9]+$/, 'is not a cart id');

export const holdCartSchema = z
  .object({
    customer: customerSchema,
    lines: z
      .array(z.object({ sale: saleIdSchema, quantity: quantitySchema }).strict())
      .min(1, 'name at least one line')
      .max(CART_MAX_LINES, `at most ${CART_MAX_LINES} lines`),
    ttlMs: ttlSchema,
    idempotencyKey: idempotencyKeySchema.optional(),
  })
  .strict()
  .superRefine((cart, ctx) => {
    const seen = new Set<string>();
    cart.lines.forEach((line, i) => {
      if (seen.has(line.sale))
        ctx.addIssue({
          code: 'custom',
          path: ['lines', i, 'sale'],
          message: `sale '${line.sale}' is on an earlier line: one line per sale, with the total quantity`,
        });
      seen.add(line.sale);
    });
  });

export type HoldCartInput = z.input<typeof holdCartSchema>;
