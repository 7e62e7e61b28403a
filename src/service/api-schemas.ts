/**
 * Request bodies and answers of the HTTP API as zod schemas: the request schemas reuse the core
 * ones (the single source of truth); the answer schemas describe what the core types look like
 * on the wire and exist for the OpenAPI document (openapi.ts).
 */
import { z } from 'zod';
import {
  codeFormatSchema,
  codeStatusSchema,
  codeWindowSchema,
  createPoolSchema,
  holdTtlSchema,
  importEntrySchema,
  multiUseCodeSchema,
  updatePoolSchema,
} from '../core/pools/schemas.js';
import { claimantSchema, idempotencyKeySchema, LIMITS, localPoolNameSchema, metadataSchema } from '../core/schemas.js';
import {
  CART_MAX_LINES,
  createSaleSchema,
  quantitySchema,
  ttlSchema,
  updateSaleSchema,
  wishlistChannelsSchema,
} from '../core/sales/schemas.js';
import { counterStepSchema, semaphoreLimitSchema, ttlMsSchema, waitMsSchema } from '../core/locks/schemas.js';
import { waitingRoomSpecSchema } from '../core/sales/waiting-room.js';
import { generateSpecSchema } from '../core/generate.js';
import { withinSchema } from '../core/forecast-facade.js';

export const errorSchema = z
  .object({
    error: z.object({
      code: z
        .string()
        .meta({ description: 'Stable machine-readable code (never parse the message)', example: 'not_found' }),
      message: z.string(),
      field: z.string().optional().meta({ description: 'The input field the error is about' }),
      details: z.record(z.string(), z.unknown()).optional(),
    }),
  })
  .meta({ id: 'Error' });

export const page = <T extends z.ZodType>(item: T, id: string) =>
  z
    .object({
      data: z.array(item),
      nextCursor: z
        .string()
        .nullable()
        .meta({ description: 'Pass as `after` for the next page; null on the last page' }),
    })
    .meta({ id });

export const pageQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(1000).optional().meta({ description: 'Page size (default 100)' }),
  after: z.string().max(1024).optional().meta({ description: 'Cursor: `nextCursor` of the previous page' }),
});

const timestamp = z.string().meta({ format: 'date-time' });

export const poolStatsSchema = z.object({
  total: z.number().int(),
  free: z.number().int(),
  claimed: z.number().int(),
  redeemed: z.number().int(),
  revoked: z.number().int(),
});
export const poolSchema = z
  .object({
    name: localPoolNameSchema,
    perClaimantLimit: z.number().int(),
    lowStockThreshold: z.number().int().nullable(),
    metadata: metadataSchema,
    startsAt: timestamp.nullable(),
    expiresAt: timestamp.nullable(),
    maxRedemptions: z.number().int().nullable(),
    maxRedemptionsPerClaimant: z.number().int().nullable(),
    publicCodes: z.boolean(),
    codeFormat: codeFormatSchema.nullable(),
    createdAt: timestamp,
    stats: poolStatsSchema,
  })
  .meta({ id: 'Pool' });
export const codeInfoSchema = z
  .object({
    pool: z.string(),
    code: z.string(),
    status: codeStatusSchema,
    claimant: z.string().nullable(),
    claimedAt: timestamp.nullable(),
    redeemedAt: timestamp.nullable(),
    orderId: z.string().nullable(),
    startsAt: timestamp.nullable().optional().meta({ description: "The code's own validity window (with the pool's)" }),
    expiresAt: timestamp.nullable().optional(),
    hold: z
      .object({ claimant: z.string(), expiresAt: timestamp })
      .nullable()
      .optional()
      .meta({ description: 'A live checkout hold: only its claimant may redeem the code until it expires' }),
    uses: z
      .object({
        max: z.number().int(),
        used: z.number().int(),
        remaining: z.number().int(),
        perClaimant: z.number().int().nullable(),
        byClaimant: z.number().int().optional(),
      })
      .optional()
      .meta({ description: 'A multi-use code: its uses (for a redeem, the answer describes this use)' }),
  })
  .meta({ id: 'Code' });
export const holdBodySchema = z
  .object({
    claimant: claimantSchema,
    ttlMs: holdTtlSchema.meta({ description: 'How long the hold lasts (ms, by the store clock)' }),
  })
  .strict();
export const codeWindowBodySchema = codeWindowSchema;
export const multiUseCodeBodySchema = multiUseCodeSchema;
export const importResultSchema = z
  .object({
    imported: z.number().int(),
    duplicates: z.number().int(),
    invalid: z.number().int(),
    firstInvalid: z
      .object({
        line: z.number().int().optional(),
        index: z.number().int().optional(),
        field: z.string(),
        message: z.string(),
      })
      .optional()
      .meta({
        description:
          'The first skipped entry: `line` of the CSV (1-based) or `index` of the JSON list (0-based), the column/field, and why',
      }),
  })
  .meta({ id: 'ImportResult' });
export const claimBodySchema = z
  .object({
    claimant: claimantSchema,
    count: z
      .number()
      .int()
      .min(1)
      .max(LIMITS.claimMany)
      .optional()
      .meta({ description: 'Claim up to this many codes at once (answer has `codes`)' }),
    idempotencyKey: idempotencyKeySchema.optional().meta({ description: 'Same as the Idempotency-Key header' }),
  })
  .strict();
export const claimResultSchema = z
  .object({
    pool: z.string(),
    claimant: z.string(),
    status: z.enum(['claimed', 'already-held']),
    code: z.string().optional(),
    codes: z.array(z.string()).optional(),
    held: z.array(z.string()),
    replayed: z.boolean(),
  })
  .meta({ id: 'ClaimResult' });
export const importBodySchema = z
  .object({
    codes: z.array(importEntrySchema).max(1_000_000).meta({
      description:
        'Codes, or `{code, startsAt?, expiresAt?}` for a code with its own validity window; a bad entry is skipped and counted as `invalid`',
    }),
  })
  .strict();
export const claimantBodySchema = z.object({ claimant: claimantSchema.optional() }).strict();
export const redeemBodySchema = z
  .object({ claimant: claimantSchema.optional(), orderId: z.string().optional() })
  .strict();
export const unredeemBodySchema = z.object({ orderId: z.string().optional() }).strict();
export const validationSchema = z.object({
  valid: z.boolean(),
  reason: z
    .enum([
      'not_found',
      'not_claimed',
      'other_holder',
      'already_redeemed',
      'revoked',
      'not_yet_valid',
      'expired',
      'limit_reached',
      'malformed',
      'held',
    ])
    .optional(),
  code: codeInfoSchema.nullable(),
});
export const holdingsSchema = z.object({ claimant: z.string(), codes: z.array(codeInfoSchema) });
export const violationsSchema = z
  .object({ violations: z.array(z.object({ invariant: z.string(), message: z.string() }).loose()) })
  .meta({ id: 'AuditResult' });
export const eventSchema = z
  .object({
    id: z.string(),
    type: z.string(),
    idempotencyKey: z.string(),
    payload: z.record(z.string(), z.unknown()),
    createdAt: timestamp,
  })
  .meta({ id: 'Event' });
export { createPoolSchema, updatePoolSchema };

export const saleSchema = z
  .object({
    id: z.string(),
    sku: z.string(),
    startsAt: timestamp,
    endsAt: timestamp,
    cap: z.number().int().nullable(),
    perCustomerLimit: z.number().int(),
    metadata: metadataSchema,
    status: z.enum(['scheduled', 'live', 'ended', 'sold_out', 'cancelled']),
    cancelledAt: timestamp.nullable(),
    createdAt: timestamp,
    stats: z.object({ sold: z.number().int(), held: z.number().int(), available: z.number().int().nullable() }),
  })
  .meta({ id: 'Sale' });
export const orderSchema = z
  .object({
    id: z.string(),
    saleId: z.string(),
    customer: z.string(),
    quantity: z.number().int(),
    holdId: z.string().nullable(),
    createdAt: timestamp,
  })
  .meta({ id: 'Order' });
export const holdSchema = z
  .object({
    id: z.string(),
    saleId: z.string(),
    customer: z.string(),
    quantity: z.number().int(),
    status: z.enum(['active', 'confirmed', 'cancelled', 'expired']),
    expiresAt: timestamp,
    createdAt: timestamp,
    orderId: z.string().nullable(),
  })
  .meta({ id: 'Hold' });
export const orderResultSchema = z.object({ order: orderSchema, replayed: z.boolean() }).meta({ id: 'OrderResult' });
export const holdResultSchema = z.object({ hold: holdSchema, replayed: z.boolean() }).meta({ id: 'HoldResult' });
export const buyBodySchema = z
  .object({
    customer: claimantSchema,
    quantity: quantitySchema.optional(),
    idempotencyKey: idempotencyKeySchema.optional(),
  })
  .strict();
export const reserveBodySchema = z
  .object({
    customer: claimantSchema,
    quantity: quantitySchema.optional(),
    ttlMs: ttlSchema,
    idempotencyKey: idempotencyKeySchema.optional(),
  })
  .strict();
export const cartLineSchema = z
  .object({
    saleId: z.string(),
    quantity: z.number().int(),
    holdId: z.string().meta({ description: "The hold that keeps the line's units" }),
    orderId: z.string().nullable().meta({ description: 'The order the line became, once the cart is confirmed' }),
  })
  .meta({ id: 'CartLine' });
export const cartSchema = z
  .object({
    id: z.string(),
    customer: z.string(),
    status: z.enum(['active', 'confirmed', 'cancelled', 'expired']),
    lines: z.array(cartLineSchema),
    expiresAt: timestamp,
    createdAt: timestamp,
  })
  .meta({ id: 'Cart' });
export const cartResultSchema = z.object({ cart: cartSchema, replayed: z.boolean() }).meta({ id: 'CartResult' });
export const cartOrdersSchema = z
  .object({ cart: cartSchema, orders: z.array(orderSchema), replayed: z.boolean() })
  .meta({ id: 'CartOrders' });
export const holdCartBodySchema = z
  .object({
    customer: claimantSchema,
    lines: z
      .array(z.object({ sale: z.string(), quantity: quantitySchema }).strict())
      .min(1)
      .max(CART_MAX_LINES)
      .meta({ description: 'One line per sale; every line is held, or none' }),
    ttlMs: ttlSchema,
    idempotencyKey: idempotencyKeySchema.optional().meta({ description: 'Same as the Idempotency-Key header' }),
  })
  .strict();
export const wishBodySchema = z.object({ sku: z.string(), customer: claimantSchema }).and(wishlistChannelsSchema);
export const wishlistEntrySchema = z
  .object({ sku: z.string(), customer: z.string(), channels: z.record(z.string(), z.unknown()), createdAt: timestamp })
  .meta({ id: 'WishlistEntry' });
export { createSaleSchema, updateSaleSchema };

// Fences are max(last + 1, the store's clock in µs): integers around 1.8e15, below 2^53 (exact in
// a JSON/JavaScript number; 64-bit integer columns hold them).
const fenceSchema = z.number().int().min(1).meta({
  description:
    'Fencing token: strictly increasing per key, also across a store that lost data (max(last + 1, the store clock in microseconds)); a large integer below 2^53',
});
export const leaseSchema = z
  .object({
    key: z.string(),
    token: z.string(),
    fence: fenceSchema,
    expiresAt: timestamp,
    validForMs: z.number().int().meta({
      description:
        'Validity left, counted conservatively from when the service sent the request to the store; count your own deadline from when YOU sent yours',
    }),
    limit: z.number().int(),
    ttlMs: z.number().int(),
    ticket: z
      .number()
      .int()
      .optional()
      .meta({ description: 'Place in the fair line (the store sequence of the line, on the scale of fences)' }),
  })
  .meta({ id: 'Lease' });
export const lockInfoSchema = z
  .object({
    key: z.string(),
    holders: z.array(z.object({ tokenPrefix: z.string(), fence: fenceSchema, expiresAt: timestamp })),
    waiters: z.number().int(),
    lastFence: z.number().int().min(0).meta({ description: 'Highest fence ever granted for the key (0 if never)' }),
  })
  .meta({ id: 'LockInfo' });
export const acquireBodySchema = z
  .object({
    ttlMs: ttlMsSchema.optional(),
    waitMs: waitMsSchema.optional(),
    limit: semaphoreLimitSchema.optional(),
    fair: z.boolean().optional(),
  })
  .strict();
const leaseTokenSchema = z
  .string()
  .meta({ description: "The token acquire answered (a semaphore slot's carries its limit: `….s<limit>`)" });
export const renewBodySchema = z
  .object({ token: leaseTokenSchema, ttlMs: ttlMsSchema.optional(), limit: semaphoreLimitSchema.optional() })
  .strict();
export const releaseBodySchema = z.object({ token: leaseTokenSchema }).strict();
export const counterSchema = z
  .object({ name: z.string(), value: z.number().int(), shards: z.number().int() })
  .meta({ id: 'Counter' });
export const counterBodySchema = z.object({ by: counterStepSchema.optional() }).strict();

export const keySchema = z
  .object({
    id: z.string(),
    tenant: z.string(),
    name: z.string(),
    scopes: z.array(z.string()),
    createdAt: timestamp,
    revokedAt: timestamp.nullable(),
  })
  .meta({ id: 'ApiKey' });
export const createKeyBodySchema = z
  .object({ name: z.string().min(1).max(100), scopes: z.array(z.string()).min(1) })
  .strict();
export const createdKeySchema = z.object({
  key: z.string().meta({ description: 'The API key. Shown once: it is stored hashed.' }),
  apiKey: keySchema,
});
export const meSchema = z.object({ keyId: z.string(), tenant: z.string(), scopes: z.array(z.string()) });

export const healthSchema = z.object({ ok: z.literal(true) });
export const readinessSchema = z
  .object({
    ok: z.boolean(),
    backend: z.string(),
    details: z.record(z.string(), z.unknown()),
    migrations: z
      .object({ applied: z.number().int().nullable(), expected: z.number().int() })
      .optional()
      .meta({ description: 'Schema version of the store and the one this build needs' }),
  })
  .meta({ id: 'Readiness' });

export const waitingRoomBodySchema = waitingRoomSpecSchema;
const ticketStatusSchema = z.enum(['waiting', 'admitted', 'used', 'expired', 'sold_out']);
// One property per status (not a record keyed by the enum): z.toJSONSchema renders a record as
// `required` names with no `properties`, which OpenAPI linters rightly flag as undefined.
const ticketCountsSchema = z
  .object(
    Object.fromEntries(ticketStatusSchema.options.map((status) => [status, z.number().int()])) as Record<
      z.infer<typeof ticketStatusSchema>,
      z.ZodNumber
    >,
  )
  .meta({ description: 'Tickets by status right now' });
const roomDrawSchema = z
  .object({
    seed: z.string().nullable().meta({
      description: '16 hex digits: drawOrder(seed, preQueue) re-derives the order; null without a fair start',
    }),
    preQueue: z.number().int().meta({ description: 'Tickets in the pre-queue: arrival numbers 1..preQueue' }),
    drawnAt: timestamp,
  })
  .meta({ id: 'RoomDraw', description: "The opening's draw, made once by the store; null until the sale opens" });
export const waitingRoomSchema = z
  .object({
    saleId: z.string(),
    admitPerSecond: z.number(),
    windowMs: z.number().int(),
    fairStart: z.boolean().meta({ description: 'Those who join before the opening get a random place at it' }),
    verification: z.boolean().meta({ description: 'A ticket is admitted only once verified' }),
    draw: roomDrawSchema.nullable(),
    createdAt: timestamp,
    tickets: ticketCountsSchema,
  })
  .meta({ id: 'WaitingRoom' });
export const ticketSchema = z
  .object({
    saleId: z.string(),
    customer: z.string(),
    number: z.number().int().meta({ description: 'Arrival number, 1-based, in the order the store saw the arrivals' }),
    status: ticketStatusSchema,
    place: z.number().int().nullable().meta({
      description:
        "Place in line: arrival order, or drawn at the opening for a fair start's pre-queue (null until then)",
    }),
    verified: z.boolean().meta({ description: 'Verified for admission (always true without verification)' }),
    position: z
      .number()
      .int()
      .meta({ description: 'Tickets ahead (0 once admitted; before the draw, everyone else in the pre-queue)' }),
    estimatedWaitMs: z
      .number()
      .nullable()
      .meta({ description: "Rough wait until admission at the room's rate; null when it will never be" }),
    admittedUntil: timestamp.nullable(),
    holdId: z.string().nullable(),
    token: z
      .string()
      .optional()
      .meta({ description: 'The bearer token (send it as Dibs-Ticket); in the answer to joining the line' }),
  })
  .meta({ id: 'Ticket' });
export const joinBodySchema = z.object({ customer: claimantSchema }).strict();
export const roomReserveBodySchema = z
  .object({ customer: claimantSchema, quantity: quantitySchema.optional(), ttlMs: ttlSchema })
  .strict();

const perMinuteSchema = z.object({ '1m': z.number(), '5m': z.number(), '15m': z.number() });
export const forecastSchema = z
  .object({
    kind: z.enum(['pool', 'sale']),
    subject: z.string(),
    remaining: z.number().int().nullable().meta({ description: 'Units available now; null for an unlimited sale' }),
    perMinute: perMinuteSchema.meta({ description: 'Units taken per minute over the last 1, 5 and 15 minutes' }),
    basis: z.enum(['1m', '5m', '15m']).nullable(),
    timeToEmptyMs: z.number().nullable(),
    emptyAt: timestamp.nullable(),
    at: timestamp,
  })
  .meta({ id: 'Forecast' });
export const forecastAlertBodySchema = z
  .object({
    withinMs: withinSchema.optional().meta({
      description:
        'Record `<kind>.empty_soon` (once per crossing) when predicted empty within this many ms; null or absent stops watching',
    }),
  })
  .strict();

export const generateBodySchema = generateSpecSchema;
export const generateResultSchema = z
  .object({
    generated: z.number().int(),
    collisions: z.number().int().meta({ description: 'Draws that collided with an existing code and were redrawn' }),
  })
  .meta({ id: 'GenerateResult' });

export const claimRateSchema = z
  .object({
    pool: z.string(),
    everyMs: z.number().int(),
    points: z.array(z.object({ at: timestamp, handedOut: z.number().int(), perMinute: z.number() })),
  })
  .meta({ id: 'ClaimRate' });
export const outboxStatusSchema = z
  .object({
    pending: z.number().int(),
    delivered: z.number().int(),
    dead: z.number().int(),
    oldestPendingMs: z.number().meta({ description: "Age of the oldest undelivered event (the dispatcher's lag)" }),
  })
  .meta({ id: 'OutboxStatus' });
export const deliveriesSchema = z
  .object({
    event: z.string(),
    data: z.array(z.object({ attempt: z.number().int(), ok: z.boolean(), detail: z.string(), at: timestamp })),
  })
  .meta({ id: 'Deliveries' });
export const endpointStatsSchema = z
  .object({
    dispatcher: z.boolean().meta({ description: 'Whether this service instance runs an outbox dispatcher' }),
    since: timestamp.nullable().meta({ description: 'When this instance began counting (its start)' }),
    data: z.array(
      z.object({
        endpoint: z.string().meta({ description: 'Webhook URL (without credentials), destination label or channel' }),
        ok: z.number().int(),
        failed: z.number().int(),
        successRate: z.number().nullable().meta({ description: 'ok / (ok + failed), null before any attempt' }),
        lastOkAt: timestamp.nullable(),
        lastFailureAt: timestamp.nullable(),
        lastError: z.string().nullable(),
      }),
    ),
  })
  .meta({ id: 'EndpointStats' });
export const deadLettersSchema = z
  .object({
    data: z.array(
      z.object({
        id: z.string(),
        type: z.string(),
        createdAt: timestamp,
        attempts: z.number().int(),
        lastError: z.string(),
        deadAt: timestamp,
      }),
    ),
  })
  .meta({ id: 'DeadLetters' });
export const retryResultSchema = z
  .object({ event: z.string(), outcome: z.literal('queued') })
  .meta({ id: 'RetryResult' });
