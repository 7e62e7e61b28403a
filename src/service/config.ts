/**
 * Service configuration from a JSON file, the environment and command-line flags — in that order
 * of precedence, lowest first — validated once with zod, so a typo fails at start with the name of
 * the setting instead of misbehaving later.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { DibsError } from '../core/errors.js';
import { parseInput } from '../core/validate.js';
import { DEFAULT_STORE } from '../backends/registry.js';

const int = (min: number, max: number) =>
  z.coerce.number({ error: 'must be a number' }).int('must be a whole number').min(min).max(max);
const bool = z.union([
  z.boolean(),
  z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => ['true', '1', 'yes'].includes(v)),
]);

export const serviceConfigSchema = z
  .object({
    store: z.string().min(1).default(DEFAULT_STORE),
    port: int(0, 65535).default(3000),
    host: z.string().min(1).default('127.0.0.1'),
    logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** Background jobs (sale activation/expiry, hold sweep, forecast alerts, outbox delivery, idempotency purge, Firestore pool-deletion finishing). */
    jobs: bool.default(true),
    jobsEveryMs: int(50, 3_600_000).default(1000),
    /** Seed a demo pool and sale, and print a fresh local admin key. */
    demo: bool.default(false),
    /** Requests per API key per window; 0 turns rate limiting off. */
    rateLimit: int(0, 10_000_000).default(6000),
    rateLimitWindowMs: int(1000, 86_400_000).default(60_000),
    idempotencyTtlMs: int(60_000, 30 * 86_400_000).default(86_400_000),
    keyCacheMs: int(0, 600_000).default(5000),
    metricsPublic: bool.default(false),
    bodyLimit: int(1024, 1024 * 1024 * 1024).default(1024 * 1024),
    /**
     * How long a graceful shutdown waits for requests in flight (a slow upload, say) before it
     * closes their connections; below Kubernetes' default 30 s grace period, so the process still
     * closes its store and exits by itself. Such requests were never answered: nothing acknowledged
     * is lost. 0 waits for every request however long.
     */
    shutdownTimeoutMs: int(0, 3_600_000).default(25_000),
    /** Service processes sharing the port (node:cluster); `auto` = the machine's available parallelism. */
    workers: z
      .union([z.string(), z.number()])
      .transform((value, ctx): number | 'auto' => {
        if (value === 'auto') return value;
        const n = Number(value);
        if (Number.isInteger(n) && n >= 1 && n <= 256) return n;
        ctx.addIssue({ code: 'custom', message: "a whole number from 1 to 256, or 'auto'" });
        return z.NEVER;
      })
      .default(1),
  })
  .strict();

export type ServiceConfig = z.output<typeof serviceConfigSchema>;
export type ServiceConfigInput = z.input<typeof serviceConfigSchema>;

/** Environment variable → setting (docs/operations.md lists every one; test/service/operations-doc.test.ts checks). */
export const ENV: Record<string, keyof ServiceConfig> = {
  DIBS_STORE: 'store',
  PORT: 'port',
  HOST: 'host',
  LOG_LEVEL: 'logLevel',
  DIBS_JOBS: 'jobs',
  DIBS_JOBS_EVERY_MS: 'jobsEveryMs',
  DIBS_RATE_LIMIT: 'rateLimit',
  DIBS_RATE_LIMIT_WINDOW_MS: 'rateLimitWindowMs',
  DIBS_IDEMPOTENCY_TTL_MS: 'idempotencyTtlMs',
  DIBS_KEY_CACHE_MS: 'keyCacheMs',
  DIBS_METRICS_PUBLIC: 'metricsPublic',
  DIBS_BODY_LIMIT: 'bodyLimit',
  DIBS_SHUTDOWN_TIMEOUT_MS: 'shutdownTimeoutMs',
  DIBS_WORKERS: 'workers',
};

export function loadServiceConfig(
  options: { file?: string; env?: NodeJS.ProcessEnv; flags?: Partial<Record<keyof ServiceConfig, unknown>> } = {},
): ServiceConfig {
  const env = options.env ?? process.env;
  const fromFile = readConfigFile(options.file ?? env.DIBS_CONFIG);
  const fromFlags = Object.fromEntries(Object.entries(options.flags ?? {}).filter(([, v]) => v !== undefined));
  return parseInput(serviceConfigSchema, { ...fromFile, ...settingsFromEnv(env), ...fromFlags }, 'config');
}

/** The settings the environment gives (ENV); a variable set to the empty string counts as unset. */
function settingsFromEnv(env: NodeJS.ProcessEnv): Partial<Record<keyof ServiceConfig, string>> {
  const settings: Partial<Record<keyof ServiceConfig, string>> = {};
  for (const [name, key] of Object.entries(ENV))
    if (env[name] !== undefined && env[name] !== '') settings[key] = env[name];
  return settings;
}

/** The settings of a JSON config file (none without a file); an unreadable file or one that is not an object is a user error. */
function readConfigFile(file: string | undefined): Record<string, unknown> {
  if (!file) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new DibsError('invalid_input', `config: cannot read ${file}: ${(error as Error).message}`, {
      field: 'config',
    });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new DibsError('invalid_input', `config: ${file} must hold a JSON object`, { field: 'config' });
  return parsed as Record<string, unknown>;
}

/**
 * The store the CLI's other commands (`dibs keys`, `dibs pools`, …) open, with the same precedence
 * as `serve`: --store, then DIBS_STORE, then the config file's `store`, then the default. Only
 * `store` is read from the file, so a setting that only `serve` uses cannot stop `dibs keys create`.
 */
export function resolveStore(options: { flag?: string; file?: string; env?: NodeJS.ProcessEnv } = {}): string {
  const env = options.env ?? process.env;
  const fromFile = readConfigFile(options.file ?? env.DIBS_CONFIG).store;
  const store = options.flag ?? settingsFromEnv(env).store ?? fromFile;
  return parseInput(serviceConfigSchema.pick({ store: true }), { store }, 'config').store;
}
