/**
 * Validation and defaults for a load test. Everything a user can get wrong is caught here,
 * before a pool is created or a process spawned, as one `invalid_input` DibsError (the CLI
 * maps it to exit code 2).
 */
import { isAbsolute, resolve } from 'node:path';
import { z } from 'zod';
import { poolNameSchema } from '../core/schemas.js';
import { parseInput } from '../core/validate.js';
import {
  ARRIVAL_PATTERNS,
  LOAD_MODES,
  type ArrivalPattern,
  type LoadMode,
  type LoadTarget,
  type LoadtestOptions,
} from './types.js';

export const DEFAULTS = {
  processes: 4,
  claimants: 10_000,
  codes: 5_000,
  arrival: 'burst' as ArrivalPattern,
  durationSec: 30,
  repeatRatio: 0.1,
  limit: 1,
  concurrency: 16,
  mode: 'pool' as LoadMode,
  cap: 5_000,
  qty: 1,
  keys: 8,
  holdMs: 2,
} as const;

/** Upper bounds: a load test is bounded in processes, requests and time. */
export const BOUNDS = {
  processes: 64,
  claimants: 1_000_000,
  codes: 1_000_000,
  durationSec: 3600,
  concurrency: 1024,
  limit: 1000,
  timeoutSec: 4 * 3600,
  cap: 10_000_000,
  keys: 10_000,
  holdMs: 60_000,
} as const;

export interface ResolvedOptions {
  target: LoadTarget;
  mode: LoadMode;
  cap: number;
  qty: number;
  keys: number;
  holdMs: number;
  processes: number;
  claimants: number;
  codes: number;
  pool: string | undefined;
  arrival: ArrivalPattern;
  durationSec: number;
  repeatRatio: number;
  /** Undefined when not given: a fresh pool then uses 1, an existing pool its own limit. */
  limit: number | undefined;
  concurrency: number;
  timeoutSec: number;
  seed: number;
}

const int = (min: number, max: number) =>
  z
    .number({ error: 'must be a number' })
    .int('must be a whole number')
    .min(min, `must be at least ${min}`)
    .max(max, `at most ${max}`);

const targetSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('store'),
    store: z.string().min(1, 'must not be empty'),
    storeOptions: z.record(z.string(), z.unknown()).optional(),
    storeModule: z.string().min(1).optional(),
  }),
  z.object({
    kind: z.literal('url'),
    url: z
      .string()
      .url('must be a URL like http://127.0.0.1:3000')
      .refine((u) => /^https?:$/.test(new URL(u).protocol), 'must be an http:// or https:// URL'),
    key: z.string().min(1).optional(),
    requestTimeoutMs: int(1, 600_000).optional(),
  }),
]);

const optionsSchema = z
  .object({
    target: targetSchema,
    mode: z
      .enum(LOAD_MODES as [LoadMode, ...LoadMode[]], { error: `must be one of ${LOAD_MODES.join(', ')}` })
      .default(DEFAULTS.mode),
    cap: int(0, BOUNDS.cap).optional(),
    qty: int(1, BOUNDS.limit).optional(),
    keys: int(1, BOUNDS.keys).optional(),
    holdMs: int(0, BOUNDS.holdMs).optional(),
    processes: int(1, BOUNDS.processes).default(DEFAULTS.processes),
    claimants: int(1, BOUNDS.claimants).default(DEFAULTS.claimants),
    codes: int(0, BOUNDS.codes).optional(),
    pool: poolNameSchema.optional(),
    arrival: z
      .enum(ARRIVAL_PATTERNS as [ArrivalPattern, ...ArrivalPattern[]], {
        error: `must be one of ${ARRIVAL_PATTERNS.join(', ')}`,
      })
      .default(DEFAULTS.arrival),
    durationSec: z
      .number({ error: 'must be a number' })
      .positive('must be more than 0')
      .max(BOUNDS.durationSec, `at most ${BOUNDS.durationSec}`)
      .default(DEFAULTS.durationSec),
    repeatRatio: z
      .number({ error: 'must be a number' })
      .min(0, 'must be between 0 and 1')
      .max(1, 'must be between 0 and 1')
      .default(DEFAULTS.repeatRatio),
    limit: int(1, BOUNDS.limit).optional(),
    concurrency: int(1, BOUNDS.concurrency).default(DEFAULTS.concurrency),
    timeoutSec: z
      .number({ error: 'must be a number' })
      .positive('must be more than 0')
      .max(BOUNDS.timeoutSec)
      .optional(),
    seed: z.number().int().optional(),
  })
  .strict()
  .superRefine((o, ctx) => {
    // Options of another mode are a mistake worth naming, not something to ignore silently.
    const foreign: Record<LoadMode, (keyof typeof o)[]> = {
      pool: ['cap', 'qty', 'keys', 'holdMs'],
      sale: ['codes', 'pool', 'keys', 'holdMs'],
      locks: ['codes', 'pool', 'cap', 'qty', 'limit'],
    };
    for (const field of foreign[o.mode]) {
      if (o[field] !== undefined)
        ctx.addIssue({ code: 'custom', path: [field], message: `does not apply to ${o.mode} mode` });
    }
    if (o.mode === 'sale' && o.qty !== undefined && o.limit !== undefined && o.qty > o.limit)
      ctx.addIssue({ code: 'custom', path: ['qty'], message: `must not exceed the per-customer limit (${o.limit})` });
  });

export function resolveOptions(input: LoadtestOptions): ResolvedOptions {
  const o = parseInput(optionsSchema, input);
  const window = o.arrival === 'burst' ? 0 : o.durationSec;
  const target: LoadTarget =
    o.target.kind === 'store' && o.target.storeModule !== undefined && !isAbsolute(o.target.storeModule)
      ? { ...o.target, storeModule: resolve(o.target.storeModule) }
      : o.target;
  const qty = o.qty ?? DEFAULTS.qty;
  return {
    ...o,
    target,
    codes: o.codes ?? DEFAULTS.codes,
    cap: o.cap ?? DEFAULTS.cap,
    qty,
    keys: o.keys ?? DEFAULTS.keys,
    holdMs: o.holdMs ?? DEFAULTS.holdMs,
    // sale mode: a customer may buy its qty once unless told otherwise
    ...(o.mode === 'sale' && o.limit === undefined ? { limit: qty } : {}),
    pool: o.pool,
    limit: o.limit,
    timeoutSec: o.timeoutSec ?? window + 300,
    seed: o.seed ?? Date.now() & 0x7fffffff,
  };
}
