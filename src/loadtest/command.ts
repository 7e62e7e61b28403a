/**
 * `dibs loadtest`: the CLI shell around `runLoadtest`. Parses and checks options, shows live
 * progress on a terminal, prints the report (text or --json), writes the JSON report and the
 * SVG chart, and sets the exit code: 0 clean, 1 a violation or a failed run, 2 bad input.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { DibsError } from '../core/errors.js';
import { EXIT as CLI_EXIT, wantsJson, type GlobalOptions } from '../cli/context.js';
import { DEFAULT_STORE } from '../backends/registry.js';
import { formatProgress, formatReport } from './format.js';
import { BOUNDS, DEFAULTS } from './options.js';
import { runLoadtest } from './run.js';
import { LoadtestInterrupted } from './spawn.js';
import { renderSvg } from './svg.js';
import {
  ARRIVAL_PATTERNS,
  type ArrivalPattern,
  type LoadTarget,
  type LoadtestOptions,
  type LoadtestReport,
} from './types.js';

/** The CLI's exit codes (0 ok, 1 failure/violation, 2 user mistake), plus 130 for Ctrl-C. */
export const EXIT = { ...CLI_EXIT, interrupted: 130 } as const;

const integer = (min: number, max: number) => (raw: string) => {
  const value = Number(raw);
  if (!/^\s*\d+\s*$/.test(raw) || !Number.isSafeInteger(value) || value < min || value > max)
    throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}.`);
  return value;
};
const decimal =
  (min: number, max: number, exclusiveMin = false) =>
  (raw: string) => {
    const value = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(value) || value < min || value > max || (exclusiveMin && value === min)) {
      throw new InvalidArgumentError(
        `expected a number ${exclusiveMin ? 'above' : 'from'} ${min} ${exclusiveMin ? 'and up to' : 'to'} ${max}.`,
      );
    }
    return value;
  };

interface CliOptions {
  store?: string;
  url?: string;
  key?: string;
  requestTimeout?: number;
  processes: number;
  claimants: number;
  codes?: number;
  pool?: string;
  arrival: ArrivalPattern;
  duration: number;
  repeatRatio: number;
  limit?: number;
  concurrency: number;
  timeout?: number;
  seed?: number;
  json?: boolean;
  svg?: string;
  out?: string;
  progress: boolean;
  storeModule?: string;
  sale?: boolean;
  cap?: number;
  qty?: number;
  locks?: boolean;
  keys?: number;
  holdMs?: number;
}

const EXAMPLES = `
Examples:
  # The seed scenario: 10,000 users, 5,000 coupons, everyone at once, 4 instances
  $ dibs loadtest --store sqlite:./load.db --claimants 10000 --codes 5000 --processes 4

  # The same users spread over 30 seconds, ramping up, against PostgreSQL
  $ dibs loadtest --store postgres://127.0.0.1/dibs --arrival ramp --duration 30

  # Against a running service, with a key; keep the report and the chart
  $ dibs loadtest --url http://127.0.0.1:3000 --key "$DIBS_API_KEY" --out ./loadtest-results

  # Three codes per claimant, a quarter of them retrying, machine-readable
  $ dibs loadtest --limit 3 --repeat-ratio 0.25 --json > report.json

  # A flash sale: 10,000 customers, 500 units, 2 per buy, at most 2 per customer
  $ dibs loadtest --sale --cap 500 --qty 2 --claimants 10000

  # Lock handoffs: 2,000 holders over 8 keys, each holding its lease for 5 ms
  $ dibs loadtest --locks --keys 8 --hold-ms 5 --claimants 2000

What it checks: after the run it exports the pool, reads its counters and its audit, and
verifies exactly-once against every answer the clients got — no code acknowledged to two
claimants (I1), nobody over the limit and retries answered with their original code (I2),
counters equal to the ledger (I4), every acknowledged claim still in the store (I5), exactly
min(demand, codes) codes handed out with everyone else told sold_out, and a clean audit.
With --sale: sold ≤ cap with holds counted (I3), nobody over the limit, every acknowledged
order counted, exactly min(demand, cap) units sold. With --locks: on every key no two holders
overlapped in time and fences grew (I6), every request got the lock, no lease left behind.

A fresh pool named loadtest-<time>-<id> is created and filled unless --pool is given; it is
kept afterwards so you can inspect it (dibs stats/export/audit <pool>).

Exit codes: 0 clean · 1 a violation (or the run could not complete) · 2 bad input.`;

export function registerLoadtestCommand(program: Command): Command {
  const command = program
    .command('loadtest')
    .description(
      'Hammer a coupon pool (or a flash sale, or locks) from many processes like a flash campaign, then prove every code went out exactly once',
    )
    .option(
      '--store <url>',
      `store to load through the library, one openDibs per process (env DIBS_STORE; default ${DEFAULT_STORE})`,
    )
    .option('--url <url>', 'base URL of a running dibs service to load over HTTP instead (e.g. http://127.0.0.1:3000)')
    .option('--key <key>', 'API key for --url, sent as "Authorization: Bearer <key>" (default: $DIBS_API_KEY)')
    .option(
      '--request-timeout <ms>',
      'with --url: a claim without an answer after this long counts as a timeout error (default: 30000)',
      integer(1, 600_000),
    )
    .option(
      '--processes <n>',
      'worker OS processes, like serverless instances',
      integer(1, BOUNDS.processes),
      DEFAULTS.processes,
    )
    .option('--claimants <n>', 'distinct simulated users', integer(1, BOUNDS.claimants), DEFAULTS.claimants)
    .option('--codes <n>', `codes to put in the fresh pool (default: ${DEFAULTS.codes})`, integer(0, BOUNDS.codes))
    .option(
      '--pool <name>',
      'claim from this existing pool instead of creating one (nobody else should use it meanwhile)',
    )
    .addOption(
      new Option(
        '--arrival <pattern>',
        'burst: everyone at once · uniform: evenly over --duration · ramp: arrivals growing linearly over --duration',
      )
        .choices([...ARRIVAL_PATTERNS])
        .default(DEFAULTS.arrival),
    )
    .option(
      '--duration <seconds>',
      'window for uniform and ramp arrivals',
      decimal(0, BOUNDS.durationSec, true),
      DEFAULTS.durationSec,
    )
    .option(
      '--repeat-ratio <ratio>',
      'fraction of claimants that double-click or retry with the same idempotency key (0..1)',
      decimal(0, 1),
      DEFAULTS.repeatRatio,
    )
    .option(
      '--limit <n>',
      'per-claimant limit of the fresh pool; each claimant asks for that many codes (default 1)',
      integer(1, BOUNDS.limit),
    )
    .option('--concurrency <n>', 'claims in flight per process', integer(1, BOUNDS.concurrency), DEFAULTS.concurrency)
    .option(
      '--timeout <seconds>',
      'stop everything after this long (default: the window + 300)',
      decimal(0, BOUNDS.timeoutSec, true),
    )
    .option('--seed <n>', 'seed of the plan (who repeats, who goes first), to replay a run', integer(0, 2 ** 31 - 1))
    .option('--json', 'print the report as JSON on stdout')
    .option('--svg <file>', 'write the chart (latency over time, outcomes) as SVG to this file')
    .option('--out <dir>', 'write <pool>.json (the report) and <pool>.svg (the chart) into this directory')
    .option('--sale', 'load a flash sale instead of a pool: every claimant buys --qty units once')
    .option('--cap <n>', 'with --sale: units for sale (default 5000)', integer(0, BOUNDS.cap))
    .option('--qty <n>', 'with --sale: units per buy (default 1)', integer(1, BOUNDS.limit))
    .option('--locks', 'load locks instead of a pool: every claimant acquires one of --keys, holds it, releases it')
    .option('--keys <n>', 'with --locks: lock keys the claimants contend for (default 8)', integer(1, BOUNDS.keys))
    .option(
      '--hold-ms <ms>',
      'with --locks: how long each holder keeps its lease (default 2)',
      integer(0, BOUNDS.holdMs),
    )
    .option('--no-progress', 'no live progress line on stderr')
    // A module exporting openDibs(store, options) used instead of dibs' own: load-test a wrapper.
    .addOption(new Option('--store-module <file>').hideHelp())
    .addHelpText('after', EXAMPLES)
    .action(async (options: CliOptions, self: Command) => {
      // `--store` and `--json` are also the program's global options, which commander lets the
      // program consume wherever they appear: read them with the globals.
      const { store } = self.optsWithGlobals() as GlobalOptions;
      process.exitCode = await loadtestAction({
        ...options,
        ...(store !== undefined ? { store } : {}),
        json: wantsJson(self),
      });
    });
  // Bad input (commander's parse errors and invalid_input DibsErrors) is left to the program's
  // error handler, which maps it to exit code 2 like every other dibs command.
  return command;
}

function toOptions(cli: CliOptions): LoadtestOptions {
  let target: LoadTarget;
  if (cli.url !== undefined) {
    if (cli.store !== undefined) throw new UsageError('give either --store or --url, not both');
    if (cli.storeModule !== undefined) throw new UsageError('--store-module works with --store only');
    const key = cli.key ?? process.env.DIBS_API_KEY;
    target = {
      kind: 'url',
      url: cli.url,
      ...(key ? { key } : {}),
      ...(cli.requestTimeout !== undefined ? { requestTimeoutMs: cli.requestTimeout } : {}),
    };
  } else {
    if (cli.key !== undefined) throw new UsageError('--key works with --url only');
    if (cli.requestTimeout !== undefined) throw new UsageError('--request-timeout works with --url only');
    target = {
      kind: 'store',
      store: cli.store ?? process.env.DIBS_STORE ?? DEFAULT_STORE,
      ...(cli.storeModule ? { storeModule: cli.storeModule } : {}),
    };
  }
  if (cli.pool !== undefined && cli.codes !== undefined)
    throw new UsageError('--codes fills a fresh pool; it cannot be combined with --pool');
  if (cli.sale && cli.locks) throw new UsageError('give either --sale or --locks, not both');
  const mode = cli.sale ? 'sale' : cli.locks ? 'locks' : 'pool';
  const misplaced = (
    [
      ['--cap', cli.cap, 'sale'],
      ['--qty', cli.qty, 'sale'],
      ['--keys', cli.keys, 'locks'],
      ['--hold-ms', cli.holdMs, 'locks'],
    ] as const
  ).find(([, value, wants]) => value !== undefined && mode !== wants);
  if (misplaced) throw new UsageError(`${misplaced[0]} works with --${misplaced[2]} only`);
  return {
    target,
    mode,
    ...(cli.cap !== undefined ? { cap: cli.cap } : {}),
    ...(cli.qty !== undefined ? { qty: cli.qty } : {}),
    ...(cli.keys !== undefined ? { keys: cli.keys } : {}),
    ...(cli.holdMs !== undefined ? { holdMs: cli.holdMs } : {}),
    processes: cli.processes,
    claimants: cli.claimants,
    ...(cli.codes !== undefined ? { codes: cli.codes } : {}),
    ...(cli.pool !== undefined ? { pool: cli.pool } : {}),
    arrival: cli.arrival,
    durationSec: cli.duration,
    repeatRatio: cli.repeatRatio,
    ...(cli.limit !== undefined ? { limit: cli.limit } : {}),
    concurrency: cli.concurrency,
    ...(cli.timeout !== undefined ? { timeoutSec: cli.timeout } : {}),
    ...(cli.seed !== undefined ? { seed: cli.seed } : {}),
  };
}

/** A combination of options that makes no sense: bad input, exit code 2. */
class UsageError extends DibsError {
  constructor(message: string) {
    super('invalid_input', message);
  }
}

/**
 * Runs the command; returns the exit code of a run that completed (0 clean, 1 violations).
 * Bad input and a store that cannot be reached are thrown as DibsErrors for the program's
 * error handler (2 for a user mistake, 1 otherwise); Ctrl-C returns 130.
 */
export async function loadtestAction(cli: CliOptions): Promise<number> {
  const live = cli.progress && process.stderr.isTTY === true;
  const status = new StatusLine(live);
  let report: LoadtestReport;
  try {
    const options = toOptions(cli);
    report = await runLoadtest(options, {
      onPhase: (phase, message) => phase !== 'done' && status.note(message),
      onProgress: (p) => status.update(formatProgress(p)),
      progressIntervalMs: 200,
    });
  } catch (error) {
    status.clear();
    if (!(error instanceof LoadtestInterrupted)) throw error;
    process.stderr.write(`error: ${error.message}\n`);
    return EXIT.interrupted;
  }
  status.clear();

  const written: string[] = [];
  try {
    if (cli.out !== undefined) {
      mkdirSync(cli.out, { recursive: true });
      const json = join(cli.out, `${report.pool}.json`);
      writeFileSync(json, `${JSON.stringify(report, null, 2)}\n`);
      written.push(json);
    }
    const svgFile = cli.svg ?? (cli.out !== undefined ? join(cli.out, `${report.pool}.svg`) : undefined);
    if (svgFile !== undefined) {
      mkdirSync(dirname(resolve(svgFile)), { recursive: true });
      writeFileSync(svgFile, renderSvg(report));
      written.push(svgFile);
    }
  } catch (error) {
    process.stderr.write(
      `error: could not write the report: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    return EXIT.failure;
  }

  if (cli.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else process.stdout.write(`${formatReport(report)}\n${written.map((f) => `wrote ${f}\n`).join('')}`);
  if (cli.json && written.length > 0) process.stderr.write(written.map((f) => `wrote ${f}\n`).join(''));
  return report.ok ? EXIT.ok : EXIT.failure;
}

/** A single updating line on a terminal (phases scroll above it); silent when not a TTY. */
class StatusLine {
  private shown = false;
  constructor(private readonly enabled: boolean) {}

  note(message: string): void {
    if (!this.enabled) return;
    this.clear();
    process.stderr.write(`\x1b[2m${message}…\x1b[0m\n`);
  }

  update(line: string): void {
    if (!this.enabled) return;
    const width = process.stderr.columns ?? 120;
    process.stderr.write(`\r\x1b[2K${line.length > width - 1 ? line.slice(0, width - 1) : line}`);
    this.shown = true;
  }

  clear(): void {
    if (this.enabled && this.shown) process.stderr.write('\r\x1b[2K');
    this.shown = false;
  }
}
