import type { Command } from 'commander';
import { intOption } from '../context.js';

interface ServeFlags {
  port?: number;
  host?: string;
  demo?: boolean;
  jobs?: boolean;
  rateLimit?: number;
  metricsPublic?: boolean;
  workers?: string;
}

export function serveCommand(program: Command): void {
  program
    .command('serve')
    .description('run the HTTP API (admin dashboard at /, API reference at /docs) with the background jobs')
    .option('--port <port>', 'port to listen on (env PORT; default 3000)', intOption('--port'))
    .option('--host <host>', 'interface to bind (env HOST; default 127.0.0.1)')
    .option('--demo', 'create a demo pool (100 codes) and a live demo sale if missing, and print a local admin API key')
    .option(
      '--no-jobs',
      'do not run background jobs (sale activation/expiry, hold sweep, outbox delivery, Firestore pool deletions left by a dead deleter)',
    )
    .option(
      '--rate-limit <n>',
      'requests per API key per window (rateLimitWindowMs, default 60 s), 0 = off (env DIBS_RATE_LIMIT; default 6000)',
      intOption('--rate-limit'),
    )
    .option('--metrics-public', 'serve /metrics without an API key (env DIBS_METRICS_PUBLIC)')
    .option(
      '--workers <n>',
      "service processes sharing the port (node:cluster), or 'auto' = one per core (env DIBS_WORKERS; default 1)",
    )
    .addHelpText(
      'after',
      `
Every /v1 request needs an API key: Authorization: Bearer dibs_…
  $ dibs keys create --name backend --scopes pools:read,pools:claim
  (--demo prints a fresh admin key of the default tenant at every start)

--config <file> (env DIBS_CONFIG) is a JSON file of settings; env and flags override it.
Config file keys (JSON; env in brackets): store [DIBS_STORE], port [PORT], host [HOST],
  logLevel [LOG_LEVEL], jobs [DIBS_JOBS], jobsEveryMs [DIBS_JOBS_EVERY_MS],
  rateLimit [DIBS_RATE_LIMIT], rateLimitWindowMs [DIBS_RATE_LIMIT_WINDOW_MS],
  idempotencyTtlMs [DIBS_IDEMPOTENCY_TTL_MS], keyCacheMs [DIBS_KEY_CACHE_MS],
  metricsPublic [DIBS_METRICS_PUBLIC], bodyLimit [DIBS_BODY_LIMIT], workers [DIBS_WORKERS], demo,
  shutdownTimeoutMs [DIBS_SHUTDOWN_TIMEOUT_MS] (default 25000, 0 = wait for every request)

--workers N runs N service processes on one port (the HTTP layer costs more CPU than a claim;
  one process saturates one core). The store's migrations and --demo run once, before forking;
  jobs run in every worker (each job step is atomic and idempotent); /metrics answers with the
  series of the worker that serves the scrape (label worker). SIGTERM is forwarded to every
  worker; exit 0 once all shut down gracefully. A worker that dies is restarted.

Shutdown (SIGTERM, or Ctrl-C): stop accepting, answer requests in flight (a lock acquire
  still waiting gets 503 unavailable, retriable), finish the background job in flight, close
  the store, exit 0. Requests still running after shutdownTimeoutMs have their connections
  closed (never answered, so nothing acknowledged is lost). A repeated SIGTERM changes nothing;
  a second Ctrl-C exits at once (130).

Delivery of outbox events is configured by environment variables:
  DIBS_WEBHOOK_URLS=https://ops.example.com/hooks   endpoints for pool/sale events (comma-separated)
  DIBS_WEBHOOK_SECRET=whsec_…                         signs webhooks (header Dibs-Signature: t=…,v1=…)
  DIBS_EVENT_STREAMS=redis://events:6379/0?stream=dibs:events   the same events to Redis streams (XADD; comma-separated)
  DIBS_SMTP_URL=smtp://user:pass@mail:587 DIBS_EMAIL_FROM=sales@shop.example
  DIBS_VAPID_PUBLIC_KEY=… DIBS_VAPID_PRIVATE_KEY=… DIBS_VAPID_SUBJECT=mailto:ops@shop.example

OpenTelemetry tracing is off unless the standard variables turn it on (docs/operations.md):
  OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4318   OTLP over HTTP (or OTEL_TRACES_EXPORTER=otlp|console)
  OTEL_SERVICE_NAME=dibs OTEL_TRACES_SAMPLER=parentbased_traceidratio OTEL_TRACES_SAMPLER_ARG=0.1

Examples:
  $ dibs serve --demo
  $ dibs serve --port 8080 --host 0.0.0.0 --store postgres://dibs@db/shop`,
    )
    .action(async (opts: ServeFlags, command: Command) => {
      // The service (Fastify, metrics, delivery channels) loads only for `serve`: every other
      // command of the CLI starts about 0.3 s sooner without it.
      const [
        { redact },
        { isServiceWorker, reportListening, runPrimary, workerCount },
        { loadServiceConfig },
        { checkDeliveryEnv, exitOnSignals, startServer },
        { tracingExporters },
      ] = await Promise.all([
        import('../../backends/registry.js'),
        import('../../service/cluster.js'),
        import('../../service/config.js'),
        import('../../service/server.js'),
        import('../../tracing/sdk.js'),
      ]);
      const globals = command.optsWithGlobals() as { store?: string; config?: string };
      const config = loadServiceConfig({
        ...(globals.config ? { file: globals.config } : {}),
        flags: {
          store: globals.store,
          port: opts.port,
          host: opts.host,
          demo: opts.demo,
          jobs: opts.jobs === false ? false : undefined,
          rateLimit: opts.rateLimit,
          metricsPublic: opts.metricsPublic,
          workers: opts.workers,
        },
      });
      const { store, port, host, demo, jobs, workers: wanted, ...rest } = config;
      checkDeliveryEnv(process.env); // delivery settings fail here, once, before any worker starts
      tracingExporters(process.env); // and so do tracing settings that cannot work
      const workers = workerCount(wanted);
      if (isServiceWorker()) {
        // Forked by the primary below: serve; the primary has already run --demo. A SIGTERM that
        // arrives while starting (the primary is shutting down) shuts down once started.
        let early: string | undefined;
        const remember = (signal: string) => () => (early = signal);
        const onTerm = remember('SIGTERM');
        const onInt = remember('SIGINT');
        process.on('SIGTERM', onTerm).on('SIGINT', onInt);
        const server = await startServer({ ...rest, store, port, host, demo: false, jobs });
        process.off('SIGTERM', onTerm).off('SIGINT', onInt);
        const shutdown = exitOnSignals(server);
        reportListening(server.url);
        if (early) shutdown(early);
        return;
      }
      let served: { url: string; demoKey?: string };
      if (workers > 1) {
        const primary = await runPrimary({ store, workers, demo });
        void primary.exited.then((code) => process.exit(code));
        served = primary;
      } else {
        const server = await startServer({ ...rest, store, port, host, demo, jobs });
        exitOnSignals(server);
        served = server;
      }
      process.stderr.write(
        `\ndibs is serving ${served.url} on ${redact(store)}${workers > 1 ? ` (${workers} workers)` : ''}\n`,
      );
      if (served.demoKey) {
        const auth = `-H 'authorization: Bearer ${served.demoKey}'`;
        process.stderr.write(`
  local admin API key (default tenant; shown once, a new one at every --demo start):
    ${served.demoKey}

  API reference ${served.url}/docs
  dashboard     ${served.url}/   (log in with the key above)
  claim a code  curl -s -X POST ${served.url}/v1/pools/demo/claims ${auth} -H 'content-type: application/json' -d '{"claimant":"you@example.com"}'
  pool counts   curl -s ${served.url}/v1/pools/demo ${auth}
  buy a unit    curl -s -X POST ${served.url}/v1/sales/demo/claims ${auth} -H 'content-type: application/json' -d '{"customer":"you@example.com"}'
  audit         curl -s ${served.url}/v1/pools/demo/audit ${auth}

`);
      }
    });
}
