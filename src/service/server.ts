/**
 * Runs the service: opens the store, serves HTTP, runs the background jobs (sale activation and
 * expiration, hold sweep, outbox delivery, …; see jobs/runner.ts) and shuts down gracefully on SIGTERM/SIGINT: stop
 * accepting, finish requests in flight, finish the job or delivery batch in flight, close the
 * store, exit 0. Every answer given before that was committed by the store first.
 */
import cluster from 'node:cluster';
import type { FastifyInstance } from 'fastify';
import { DibsError, isDibsError } from '../core/errors.js';
import type { Dibs } from '../core/dibs.js';
import { redact } from '../backends/registry.js';
import { openDibs } from '../index.js';
import { JobRunner, standardJobs } from '../jobs/runner.js';
import { EmailChannel, WebhookChannel, WebPushChannel, type Channel, type Destination } from '../notify/channels.js';
import { parseStreamTarget, RedisStreamDestination } from '../notify/redis-stream.js';
import { DeliveryStats } from '../notify/delivery-stats.js';
import { OutboxDispatcher, type DispatcherOptions } from '../notify/dispatcher.js';
import { startTracingSdk } from '../tracing/sdk.js';
import { buildServer, VERSION } from './app.js';
import { createApiKey, DEFAULT_TENANT } from './auth/keys.js';
import type { ServiceConfig } from './config.js';

export interface StartOptions
  extends Partial<Omit<ServiceConfig, 'store' | 'port' | 'host' | 'jobs' | 'demo' | 'workers'>> {
  store: string;
  port: number;
  host: string;
  /** Create a `demo` pool (100 codes) and a live `demo` sale when absent, and a fresh local admin key. */
  demo?: boolean;
  logger?: boolean;
  /** Background jobs on/off (default on). */
  jobs?: boolean;
  env?: NodeJS.ProcessEnv;
  /**
   * Spans for requests, facade calls, store steps and deliveries. Default: as the OTEL_*
   * variables say (tracing/sdk.ts sets up the SDK). true: trace through the global tracer
   * provider the caller registered (no SDK set-up here); false: off.
   */
  tracing?: boolean;
  /** Outbox delivery's retry budget and backoff (default 10 attempts, 1 s doubling to 15 min). */
  delivery?: Pick<DispatcherOptions, 'maxAttempts' | 'backoff'>;
}

export interface RunningServer {
  app: FastifyInstance;
  dibs: Dibs;
  url: string;
  /** With `demo`: an admin key of the default tenant made for this run (shown once). */
  demoKey?: string;
  close(): Promise<void>;
}

export async function startServer(options: StartOptions): Promise<RunningServer> {
  const env = options.env ?? process.env;
  const sdk = options.tracing === undefined ? await startTracingSdk(env, VERSION) : null;
  let dibs: Dibs;
  try {
    dibs = await openDibs(options.store, { tracing: options.tracing ?? sdk !== null });
  } catch (error) {
    await sdk?.shutdown();
    throw error;
  }
  const rateLimit = options.rateLimit ?? 6000;
  const deliveryStats = dibs.backend.outbox && options.jobs !== false ? new DeliveryStats() : undefined;
  const app = buildServer({
    ...(deliveryStats ? { deliveryStats } : {}),
    dibs,
    logger: options.logger === false ? false : { level: options.logLevel ?? env.LOG_LEVEL ?? 'info' },
    ...(options.bodyLimit !== undefined ? { bodyLimit: options.bodyLimit } : {}),
    rateLimit: rateLimit === 0 ? false : { max: rateLimit, timeWindowMs: options.rateLimitWindowMs ?? 60_000 },
    ...(options.idempotencyTtlMs !== undefined ? { idempotency: { ttlMs: options.idempotencyTtlMs } } : {}),
    ...(options.keyCacheMs !== undefined ? { keyCacheMs: options.keyCacheMs } : {}),
    ...(options.metricsPublic !== undefined ? { metricsPublic: options.metricsPublic } : {}),
  });
  const demoKey = options.demo ? await prepareDemo(dibs) : undefined;

  const destinations = options.jobs !== false ? await destinationsFromEnv(env) : [];
  const dispatcher = new OutboxDispatcher({
    outbox: dibs.backend.outbox,
    channels: channelsFromEnv(env),
    webhookUrls: listEnv(env.DIBS_WEBHOOK_URLS),
    destinations,
    onError: (error) => app.log.error({ err: error }, 'outbox delivery failed'),
    ...(deliveryStats ? { stats: deliveryStats } : {}),
    ...options.delivery,
  });
  const every = options.jobsEveryMs ?? Number(env.DIBS_JOBS_EVERY_MS ?? 1000);
  const service = dibs.backend.service;
  const jobSpecs =
    options.jobs === false
      ? []
      : [
          ...standardJobs(dibs, { dispatcher, everyMs: every }),
          { name: 'idempotency.purge', everyMs: 60_000, run: () => service.purgeExpired() },
        ];
  const jobs = new JobRunner(jobSpecs, {
    onError: (name, error) => app.log.error({ err: error, job: name }, 'job failed'),
  });

  await app.listen({ port: options.port, host: options.host });
  jobs.start();
  const address = app.server.address();
  const url =
    typeof address === 'object' && address
      ? `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`
      : String(address);
  app.log.info({ store: redact(options.store), url }, 'dibs is serving');

  const shutdownTimeoutMs = options.shutdownTimeoutMs ?? 25_000;
  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      // A request that never ends (a stalled upload) must not hold the shutdown until the
      // orchestrator's SIGKILL: past the deadline its connection is closed. It was never
      // answered, so nothing acknowledged is lost; the store still closes cleanly.
      const deadline =
        shutdownTimeoutMs > 0
          ? setTimeout(() => {
              app.log.warn(
                { shutdownTimeoutMs },
                'shutdown deadline reached: closing the connections of requests still in flight (none of them was answered)',
              );
              app.server.closeAllConnections();
            }, shutdownTimeoutMs)
          : undefined;
      try {
        await app.close(); // stops accepting, waits for requests in flight
      } finally {
        clearTimeout(deadline);
      }
      await jobs.stop(); // finishes the job (and outbox delivery batch) in flight
      await Promise.all(destinations.map((d) => d.close()));
      await dibs.close();
      await sdk?.shutdown(); // the spans of the last requests and deliveries
    })());
  return { app, dibs, url, ...(demoKey ? { demoKey } : {}), close };
}

const DEMO_KEY_NAME = 'local admin (serve --demo)';

/**
 * `--demo`: creates the demo pool and sale when missing and returns a fresh local admin key.
 * With several workers the primary runs it once, before forking.
 */
export async function prepareDemo(dibs: Dibs): Promise<string | undefined> {
  await seedDemo(dibs);
  return demoAdminKey(dibs);
}

/**
 * A fresh admin key of the default tenant for this demo run: keys are stored hashed, so an old
 * one cannot be shown again — the previous demo keys are revoked and a new one is printed.
 */
async function demoAdminKey(dibs: Dibs): Promise<string | undefined> {
  const store = dibs.backend.service;
  for (const old of await store.listKeys(DEFAULT_TENANT))
    if (old.name === DEMO_KEY_NAME && !old.revokedAt) await store.revokeKey(old.id);
  return (await createApiKey(store, { tenant: DEFAULT_TENANT, name: DEMO_KEY_NAME, scopes: ['admin'] })).key;
}

/**
 * Installs SIGTERM/SIGINT handlers that close the server and exit 0 (1 if closing fails). A
 * cluster worker (`--workers`) also shuts down gracefully when its primary is gone.
 *
 * A repeated signal does not cut the shutdown short — systemd (KillMode=control-group) and
 * `kill -TERM -<pgid>` signal every process while the cluster primary forwards one more, and a
 * terminal's Ctrl-C reaches every worker beside the primary's SIGTERM — except a second SIGINT:
 * an operator pressing Ctrl-C twice means "now" (exit 130).
 */
export function exitOnSignals(server: RunningServer): (signal: string) => void {
  let started = false;
  const shutdown = (signal: string) => {
    if (started) return;
    started = true;
    server.app.log.info({ signal }, 'shutting down');
    server.close().then(
      () => process.exit(0),
      (error) => {
        server.app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  onShutdownSignals(shutdown, () => {
    server.app.log.warn('second interrupt: exiting without waiting for requests in flight');
    process.exit(130);
  });
  if (cluster.isWorker) process.once('disconnect', () => shutdown('primary gone'));
  return shutdown;
}

/**
 * Calls `shutdown` for every SIGTERM/SIGINT (it must ignore repeats) and `now` for a second
 * SIGINT. Handlers stay installed, so a repeated signal never falls back to Node's default
 * (terminate at once).
 */
export function onShutdownSignals(shutdown: (signal: string) => void, now: () => void): void {
  let interrupts = 0;
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => (++interrupts >= 2 ? now() : shutdown('SIGINT')));
}

function listEnv(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * Refuses delivery settings that cannot work, before anything starts. Webhooks are always signed:
 * without a secret, every pool and sale event would be marked delivered ("no webhook endpoint
 * configured") and silently never sent.
 */
export function checkDeliveryEnv(env: NodeJS.ProcessEnv): void {
  if (listEnv(env.DIBS_WEBHOOK_URLS).length > 0 && !env.DIBS_WEBHOOK_SECRET) {
    throw new DibsError(
      'invalid_input',
      'DIBS_WEBHOOK_URLS is set but DIBS_WEBHOOK_SECRET is not: webhooks are signed (header Dibs-Signature); set a secret, e.g. `openssl rand -hex 32`',
      { field: 'DIBS_WEBHOOK_SECRET' },
    );
  }
  for (const spec of listEnv(env.DIBS_EVENT_STREAMS)) parseStreamTarget(spec);
}

/** The broker streams DIBS_EVENT_STREAMS names (checked by checkDeliveryEnv first). */
async function destinationsFromEnv(env: NodeJS.ProcessEnv): Promise<Destination[]> {
  checkDeliveryEnv(env);
  return Promise.all(listEnv(env.DIBS_EVENT_STREAMS).map((spec) => RedisStreamDestination.open(spec)));
}

/** The delivery channels the environment configures (checked by checkDeliveryEnv first). */
function channelsFromEnv(env: NodeJS.ProcessEnv): { email?: Channel; webPush?: Channel; webhook?: Channel } {
  checkDeliveryEnv(env);
  const channels: { email?: Channel; webPush?: Channel; webhook?: Channel } = {};
  if (env.DIBS_WEBHOOK_SECRET) channels.webhook = new WebhookChannel({ secret: env.DIBS_WEBHOOK_SECRET });
  if (env.DIBS_SMTP_URL)
    channels.email = new EmailChannel({ smtpUrl: env.DIBS_SMTP_URL, from: env.DIBS_EMAIL_FROM ?? 'dibs@localhost' });
  if (env.DIBS_VAPID_PUBLIC_KEY && env.DIBS_VAPID_PRIVATE_KEY) {
    channels.webPush = new WebPushChannel({
      vapid: {
        subject: env.DIBS_VAPID_SUBJECT ?? 'mailto:dibs@localhost',
        publicKey: env.DIBS_VAPID_PUBLIC_KEY,
        privateKey: env.DIBS_VAPID_PRIVATE_KEY,
      },
    });
  }
  return channels;
}

async function seedDemo(dibs: Dibs): Promise<void> {
  try {
    await dibs.pools.create({
      name: 'demo',
      perClaimantLimit: 1,
      lowStockThreshold: 10,
      metadata: { note: 'created by --demo' },
    });
    await dibs.pools.importCodes(
      'demo',
      Array.from({ length: 100 }, (_, i) => `DEMO-${String(i + 1).padStart(4, '0')}`),
    );
  } catch (error) {
    if (!isDibsError(error, 'already_exists')) throw error;
  }
  try {
    await dibs.sales.create({
      id: 'demo',
      sku: 'DEMO-SKU',
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + 7 * 86_400_000).toISOString(),
      cap: 50,
      perCustomerLimit: 2,
      metadata: { note: 'created by --demo' },
    });
  } catch (error) {
    if (!isDibsError(error, 'already_exists') && !isDibsError(error, 'invalid_input')) throw error;
  }
}
