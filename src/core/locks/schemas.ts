import { z } from 'zod';
import { namespaced } from '../schemas.js';

/** Lock keys and counter names: printable, no control characters, bounded. */
export const localLockKeySchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters');
/** Lock keys and counter names, optionally under a tenant namespace (`<tenant>~<key>`, see ../schemas.ts). */
export const lockKeySchema = namespaced(localLockKeySchema, 200);
export const ttlMsSchema = z
  .number()
  .int()
  .min(100)
  .max(24 * 3600_000);
export const waitMsSchema = z
  .number()
  .int()
  .min(0)
  .max(24 * 3600_000);
export const semaphoreLimitSchema = z.number().int().min(1).max(10_000);
export const counterStepSchema = z
  .number()
  .int()
  .min(-(2 ** 52))
  .max(2 ** 52);
export const acquireOptionsSchema = z
  .object({
    ttlMs: ttlMsSchema.default(30_000),
    waitMs: waitMsSchema.default(0),
    fifo: z.boolean().default(true),
    fair: z.boolean().default(false),
    maxHoldMs: z.number().int().min(1).optional(),
    signal: z.instanceof(AbortSignal).optional(),
  })
  .strict();
export const tryAcquireOptionsSchema = z
  .object({ ttlMs: ttlMsSchema.default(30_000), fair: z.boolean().default(false) })
  .strict();
export const leaseSchema = z.object({ key: lockKeySchema, token: z.string().min(8).max(100) }).passthrough();
