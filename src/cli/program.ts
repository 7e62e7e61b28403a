import { Command } from 'commander';
import { codeCommands } from './commands/codes.js';
import { poolsCommand } from './commands/pools.js';
import { salesCommand } from './commands/sales.js';
import { cartsCommand } from './commands/carts.js';
import { generateCommand } from './commands/generate.js';
import { locksCommand } from './commands/locks.js';
import { limitsCommand } from './commands/limits.js';
import { serveCommand } from './commands/serve.js';
import { keysCommand } from './commands/keys.js';
import { registerLoadtestCommand } from '../loadtest/command.js';

export function buildProgram(): Command {
  const program = new Command('dibs')
    .description(
      'Hand out scarce things exactly once: coupon pools, flash sales, locks, counters — on SQLite, PostgreSQL, Redis or Firestore.',
    )
    .version('0.1.0')
    .option('--store <url>', 'store URL (env DIBS_STORE; default sqlite:./dibs.db)')
    .option(
      '--config <file>',
      'JSON config file (env DIBS_CONFIG): serve reads every setting, other commands its store',
    )
    .option('--json', 'machine-readable output')
    .showHelpAfterError('(run with --help for usage)')
    // Throw instead of exiting, so main.ts chooses the exit code (subcommands inherit this).
    .exitOverride()
    .addHelpText(
      'after',
      `
Stores:
  sqlite:./dibs.db            embedded, the default
  postgres://user@host/db     PostgreSQL
  redis://host:6379           Redis

Quick start:
  $ dibs pools create spring --limit 1
  $ dibs import spring codes.csv
  $ dibs claim spring alice@example.com
  $ dibs stats spring
  $ dibs serve --demo                       # prints a local admin API key
  $ dibs keys create --name backend --scopes pools:read,pools:claim
  $ dibs loadtest --claimants 10000 --codes 5000 --processes 4   # prove it on your store`,
    );
  serveCommand(program);
  keysCommand(program);
  poolsCommand(program);
  codeCommands(program);
  generateCommand(program);
  salesCommand(program);
  cartsCommand(program);
  locksCommand(program);
  limitsCommand(program);
  registerLoadtestCommand(program);
  return program;
}
