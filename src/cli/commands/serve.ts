import type { Command } from 'commander';
import { redact } from '../../backends/registry.js';
import { exitOnSignals, startServer } from '../../service/server.js';
import { intOption, storeOf } from '../context.js';

export function serveCommand(program: Command): void {
  program
    .command('serve')
    .description('run the HTTP API (and the status page at /) with the background jobs')
    .option('--port <port>', 'port to listen on (env PORT)', intOption('--port'), Number(process.env.PORT ?? 3000))
    .option('--host <host>', 'interface to bind (env HOST)', process.env.HOST ?? '127.0.0.1')
    .option('--demo', 'create a demo pool (100 codes) and a live demo sale if they are missing')
    .option('--no-jobs', 'do not run background jobs (sale activation/expiry, hold sweep, outbox delivery)')
    .addHelpText('after', `
Delivery of outbox events is configured by environment variables:
  DIBS_WEBHOOK_URLS=https://ops.example.com/hooks   endpoints for pool/sale events (comma-separated)
  DIBS_WEBHOOK_SECRET=whsec_…                         signs webhooks (header Dibs-Signature: t=…,v1=…)
  DIBS_SMTP_URL=smtp://user:pass@mail:587 DIBS_EMAIL_FROM=sales@shop.example
  DIBS_VAPID_PUBLIC_KEY=… DIBS_VAPID_PRIVATE_KEY=… DIBS_VAPID_SUBJECT=mailto:ops@shop.example

Examples:
  $ dibs serve --demo
  $ dibs serve --port 8080 --host 0.0.0.0 --store postgres://dibs@db/shop`)
    .action(async (opts: { port: number; host: string; demo?: boolean; jobs: boolean }, command: Command) => {
      const store = storeOf(command);
      const server = await startServer({ store, port: opts.port, host: opts.host, demo: Boolean(opts.demo), jobs: opts.jobs });
      exitOnSignals(server);
      process.stderr.write(`\ndibs is serving ${server.url} on ${redact(store)}\n`);
      if (opts.demo) {
        process.stderr.write(`
  status page   ${server.url}/
  claim a code  curl -s -X POST ${server.url}/v1/pools/demo/claims -H 'content-type: application/json' -d '{"claimant":"you@example.com"}'
  pool counts   curl -s ${server.url}/v1/pools/demo
  buy a unit    curl -s -X POST ${server.url}/v1/sales/demo/claims -H 'content-type: application/json' -d '{"customer":"you@example.com"}'
  audit         curl -s ${server.url}/v1/pools/demo/audit

`);
      }
    });
}
