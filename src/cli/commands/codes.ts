/** Import, claim, release/redeem/unredeem/revoke, validate, hold/unhold, window, multi-use, holdings, stats, export, audit, events. */
import { createReadStream, createWriteStream, statSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import cliProgress from 'cli-progress';
import type { Forecast } from '../../core/forecast.js';
import type { ImportProgress } from '../../core/types.js';
import { block, EXIT, intOption, output, withDibs } from '../context.js';

export function codeCommands(program: Command): void {
  program
    .command('import <pool> <file>')
    .description(
      'import codes from a CSV file (or - for stdin): one code per line, or a "code" column (optional "starts_at"/"expires_at": each code\'s own window)',
    )
    .option('--no-progress', 'no progress bar')
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  $ dibs import spring codes.csv',
        '  $ seq -f "SPRING-%06g" 1 100000 | dibs import spring -',
        "  $ printf 'code,starts_at,expires_at\\nWKND-1,2026-11-28T00:00:00Z,2026-11-30T00:00:00Z\\nANY-1,,\\n' | dibs import spring -",
        '',
        'Window columns (also "valid_from"/"valid_until") take ISO 8601 with an offset (Z or +01:00); empty = open.',
        'A row with a bad code or date is skipped and counted as invalid; the first one is named by its line.',
      ].join('\n'),
    )
    .action(async (pool: string, file: string, opts: { progress: boolean }, command: Command) => {
      await withDibs(command, async (dibs) => {
        const size = file === '-' ? undefined : statSync(file).size;
        const input = file === '-' ? process.stdin : createReadStream(file);
        let bar = opts.progress && process.stderr.isTTY ? progressBar(size) : null;
        const started = Date.now();
        try {
          const result = await dibs.pools.importCsv(pool, input, { onProgress: (p) => bar?.update(p) });
          bar?.stop();
          bar = null;
          const seconds = (Date.now() - started) / 1000;
          const first = result.firstInvalid
            ? ` (first: line ${result.firstInvalid.line}, ${result.firstInvalid.field}: ${result.firstInvalid.message})`
            : '';
          output(
            command,
            result,
            () =>
              `imported ${result.imported}, duplicates ${result.duplicates}, invalid ${result.invalid}${first} in ${seconds.toFixed(1)} s`,
          );
        } finally {
          bar?.stop();
        }
      });
    });

  program
    .command('claim <pool> <claimant>')
    .description('give a code to a claimant (or show the one it already holds)')
    .option('--key <key>', 'idempotency key: a retry with the same key returns the same answer')
    .option('--count <n>', 'claim up to n codes at once', intOption('--count'))
    .addHelpText(
      'after',
      '\nExamples:\n  $ dibs claim spring alice@example.com --key order-42\n  $ dibs claim spring bob --count 3 --json',
    )
    .action(async (pool: string, claimant: string, opts: { key?: string; count?: number }, command: Command) => {
      await withDibs(command, async (dibs) => {
        const options = opts.key ? { idempotencyKey: opts.key } : {};
        if (opts.count !== undefined) {
          const result = await dibs.pools.claimMany(pool, claimant, opts.count, options);
          output(
            command,
            result,
            () =>
              `${result.status}${result.replayed ? ' (replayed)' : ''}: ${(result.status === 'claimed' ? result.codes : result.held).join(' ')}`,
          );
        } else {
          const result = await dibs.pools.claim(pool, claimant, options);
          output(command, result, () => `${result.status}${result.replayed ? ' (replayed)' : ''}: ${result.code}`);
        }
      });
    });

  for (const [action, help] of [
    ['release', 'put a claimed code back into the pool'],
    ['redeem', 'mark a claimed code used (at checkout: --order makes a retry answer the same)'],
    ['unredeem', 'refund: a redeemed code goes back to its holder (recorded as a code.unredeemed event)'],
    ['revoke', 'withdraw a code for good (its holder loses it)'],
  ] as const) {
    const cmd = program.command(`${action} <pool> <code>`).description(help);
    if (action === 'release' || action === 'redeem')
      cmd.option('--claimant <id>', 'only if this claimant holds the code');
    if (action === 'redeem') cmd.option('--order <id>', 'the order it is redeemed for');
    if (action === 'unredeem') cmd.option('--order <id>', 'only if it was redeemed for this order');
    cmd.action(async (pool: string, code: string, opts: { claimant?: string; order?: string }, command: Command) => {
      await withDibs(command, async (dibs) => {
        const options = {
          ...(opts.claimant ? { claimant: opts.claimant } : {}),
          ...(opts.order ? { orderId: opts.order } : {}),
        };
        const info =
          action === 'release'
            ? await dibs.pools.release(pool, code, options)
            : action === 'redeem'
              ? await dibs.pools.redeem(pool, code, options)
              : action === 'unredeem'
                ? await dibs.pools.unredeem(pool, code, options)
                : await dibs.pools.revoke(pool, code);
        output(
          command,
          info,
          () =>
            `${info.code}: ${info.status}${info.claimant ? ` (${info.claimant})` : ''}${info.orderId ? ` for order ${info.orderId}` : ''}${info.uses ? ` — ${info.uses.remaining} of ${info.uses.max} uses left` : ''}`,
        );
      });
    });
  }

  program
    .command('validate <pool> <code>')
    .description('whether a code can be redeemed now, and why not (changes nothing; exit 1 when it cannot)')
    .option('--claimant <id>', 'by this claimant')
    .action(async (pool: string, code: string, opts: { claimant?: string }, command: Command) => {
      await withDibs(command, async (dibs) => {
        const answer = await dibs.pools.validate(pool, code, opts.claimant ? { claimant: opts.claimant } : {});
        output(command, answer, () =>
          answer.valid
            ? `${code}: valid (${answer.code.uses ? `${answer.code.uses.remaining} of ${answer.code.uses.max} uses left` : `held by ${answer.code.claimant}`})`
            : `${code}: not valid — ${answer.reason.replace('_', ' ')}`,
        );
        if (!answer.valid) process.exitCode = 1;
      });
    });

  program
    .command('hold <pool> <code> <claimant>')
    .description(
      'hold a code for a checkout: nobody else can redeem or hold it until the hold expires (holding again renews)',
    )
    .option('--ttl <ms>', 'how long the hold lasts, in milliseconds (1000 … 86400000)', intOption('--ttl'), 600_000)
    .addHelpText(
      'after',
      '\nExamples:\n  $ dibs hold spring SPRING-0002 alice --ttl 600000\n  $ dibs redeem spring SPRING-0002 --claimant alice --order order-42   # consumes the hold\n  $ dibs unhold spring SPRING-0002 --claimant alice                   # checkout abandoned',
    )
    .action(async (pool: string, code: string, claimant: string, opts: { ttl: number }, command: Command) => {
      await withDibs(command, async (dibs) => {
        const info = await dibs.pools.hold(pool, code, claimant, opts.ttl);
        output(command, info, () => `${info.code}: held by ${info.hold?.claimant} until ${info.hold?.expiresAt}`);
      });
    });

  program
    .command('unhold <pool> <code>')
    .description('end a checkout hold before it expires')
    .option('--claimant <id>', 'only if this claimant holds it')
    .action(async (pool: string, code: string, opts: { claimant?: string }, command: Command) => {
      await withDibs(command, async (dibs) => {
        const info = await dibs.pools.releaseHold(pool, code, opts.claimant ? { claimant: opts.claimant } : {});
        output(command, info, () => `${info.code}: ${info.status}, not held`);
      });
    });

  program
    .command('window <pool> <code>')
    .description(
      "set a code's own validity window (with the pool's): outside it the code is neither handed out nor redeemed",
    )
    .option('--starts <iso>', 'valid from (ISO 8601); absent = open')
    .option('--expires <iso>', 'valid until, exclusive (ISO 8601); absent = open')
    .addHelpText('after', '\nExamples:\n  $ dibs window spring SPRING-0002 --expires 2026-11-30T23:59:59Z')
    .action(async (pool: string, code: string, opts: { starts?: string; expires?: string }, command: Command) => {
      await withDibs(command, async (dibs) => {
        const info = await dibs.pools.setCodeWindow(pool, code, {
          startsAt: opts.starts ?? null,
          expiresAt: opts.expires ?? null,
        });
        output(
          command,
          info,
          () => `${info.code}: valid from ${info.startsAt ?? 'always'} until ${info.expiresAt ?? 'forever'}`,
        );
      });
    });

  program
    .command('multi-use <pool> <code>')
    .description(
      'add a multi-use code: one code, N uses, each order counted once (e.g. WELCOME10 for the first 1,000 buyers)',
    )
    .requiredOption('--uses <n>', 'uses in all', intOption('--uses'))
    .option('--per-claimant <n>', 'uses per claimant (default 1; 0 = no limit)', intOption('--per-claimant'), 1)
    .option('--starts <iso>', 'valid from (ISO 8601)')
    .option('--expires <iso>', 'valid until, exclusive (ISO 8601)')
    .addHelpText(
      'after',
      '\nExamples:\n  $ dibs multi-use spring WELCOME10 --uses 1000\n  $ dibs redeem spring WELCOME10 --claimant alice --order order-42',
    )
    .action(
      async (
        pool: string,
        code: string,
        opts: { uses: number; perClaimant: number; starts?: string; expires?: string },
        command: Command,
      ) => {
        await withDibs(command, async (dibs) => {
          const info = await dibs.pools.addMultiUseCode(pool, {
            code,
            uses: opts.uses,
            usesPerClaimant: opts.perClaimant === 0 ? null : opts.perClaimant,
            startsAt: opts.starts ?? null,
            expiresAt: opts.expires ?? null,
          });
          output(command, info, () => `${info.code}: ${info.uses?.remaining} of ${info.uses?.max} uses left`);
        });
      },
    );

  program
    .command('holdings <pool> <claimant>')
    .description('the codes a claimant holds')
    .action(async (pool: string, claimant: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const codes = await dibs.pools.holdings(pool, claimant);
        output(command, codes, () =>
          codes.length
            ? codes.map((c) => `${c.code}  ${c.status}  ${c.claimedAt}`).join('\n')
            : `${claimant} holds no codes in ${pool}`,
        );
      });
    });

  program
    .command('stats <pool>')
    .description('exact live counts: total, free, claimed, redeemed, revoked')
    .action(async (pool: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const stats = await dibs.pools.stats(pool);
        const forecast = dibs.backend.forecasts ? await dibs.forecasts.pool(pool) : null;
        output(command, stats, () => block([...Object.entries(stats), ...(forecast ? forecastLines(forecast) : [])]));
        // An operator reading counts should also learn when the store may forget them (Redis without AOF).
        const { warning, acks, replication } = (await dibs.health()).details;
        // Replicated Redis: what an acknowledged claim survives (acks) and the replicas' state now.
        if (typeof acks === 'string') process.stderr.write(`replication: ${replication ?? ''}; acks ${acks}\n`);
        if (typeof warning === 'string') process.stderr.write(`warning: ${warning}\n`);
      });
    });

  program
    .command('forecast <pool-or-sale>')
    .description('burn rate over the last 1/5/15 minutes and the predicted time to empty')
    .option('--sale', 'the argument is a sale id (held units count as gone)')
    .option(
      '--alert <minutes>',
      'record a <kind>.empty_soon event whenever it is predicted empty within this many minutes (0 stops)',
      intOption('--alert'),
    )
    .addHelpText(
      'after',
      '\nExamples:\n  $ dibs forecast spring\n  $ dibs forecast spring --alert 10     # webhook when "empty in < 10 min"\n  $ dibs forecast sale_… --sale',
    )
    .action(async (subject: string, opts: { sale?: boolean; alert?: number }, command: Command) => {
      await withDibs(command, async (dibs) => {
        if (opts.alert !== undefined) {
          const within = opts.alert === 0 ? null : opts.alert * 60_000;
          await (opts.sale ? dibs.forecasts.watchSale(subject, within) : dibs.forecasts.watchPool(subject, within));
        }
        const f = opts.sale ? await dibs.forecasts.sale(subject) : await dibs.forecasts.pool(subject);
        output(command, f, () =>
          block([
            [opts.sale ? 'sale' : 'pool', subject],
            ['remaining', f.remaining ?? 'unlimited'],
            ...forecastLines(f),
          ]),
        );
      });
    });

  program
    .command('export <pool>')
    .description('export every code with status and holder as CSV')
    .option('--out <file>', 'write to a file instead of stdout')
    .option('--status <status>', 'only codes in this status: free, claimed, redeemed, revoked')
    .option('--raw', 'do not escape spreadsheet formula cells (= + - @)')
    .action(
      async (
        pool: string,
        opts: { out?: string; status?: 'free' | 'claimed' | 'redeemed' | 'revoked'; raw?: boolean },
        command: Command,
      ) => {
        await withDibs(command, async (dibs) => {
          const csv = await dibs.pools.exportCsv(pool, {
            ...(opts.status ? { status: opts.status } : {}),
            escapeFormulas: !opts.raw,
          });
          await pipeline(csv, opts.out ? createWriteStream(opts.out) : process.stdout, { end: Boolean(opts.out) });
          if (opts.out) process.stderr.write(`exported ${pool} to ${opts.out}\n`);
        });
      },
    );

  program
    .command('audit <pool>')
    .description('check the invariants on the stored data; exit code 1 when any is violated')
    .action(async (pool: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const violations = await dibs.pools.audit(pool);
        output(command, { violations }, () =>
          violations.length === 0
            ? `${pool}: clean (I1, I2, I4, I7 hold)`
            : violations.map((v) => `${v.invariant}  ${v.message}`).join('\n'),
        );
        if (violations.length > 0) process.exitCode = EXIT.failure;
      });
    });

  program
    .command('events')
    .description('read the outbox (low-stock, sale and hold events)')
    .option('--pool <pool>', 'only events of this pool')
    .option('--after <id>', 'events after this id')
    .option('--limit <n>', 'how many', intOption('--limit'), 100)
    .action(async (opts: { pool?: string; after?: string; limit: number }, command: Command) => {
      await withDibs(command, async (dibs) => {
        const events = await dibs.pools.events({
          limit: opts.limit,
          ...(opts.pool ? { pool: opts.pool } : {}),
          ...(opts.after ? { after: opts.after } : {}),
        });
        output(command, events, () =>
          events.length
            ? events.map((e) => `${e.id}  ${e.createdAt}  ${e.type}  ${JSON.stringify(e.payload)}`).join('\n')
            : 'no events',
        );
      });
    });
}

function progressBar(size: number | undefined) {
  const bar = new cliProgress.SingleBar(
    {
      format: size
        ? 'importing |{bar}| {percentage}% · {imported} imported · {duplicates} duplicates · {invalid} invalid · eta {eta_formatted}'
        : 'importing {imported} imported · {duplicates} duplicates · {invalid} invalid',
      stream: process.stderr,
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(size ?? 0, 0, { imported: 0, duplicates: 0, invalid: 0 });
  return {
    update: (p: ImportProgress) =>
      bar.update(p.bytes ?? 0, { imported: p.imported, duplicates: p.duplicates, invalid: p.invalid }),
    stop: () => bar.stop(),
  };
}

/** "pace" and "empty" lines for the human output of stats/forecast. */
function forecastLines(f: Forecast): [string, unknown][] {
  const pace = `${f.perMinute['1m']}/min (1m) · ${f.perMinute['5m']}/min (5m) · ${f.perMinute['15m']}/min (15m)`;
  const empty =
    f.timeToEmptyMs === null
      ? 'not at this pace'
      : f.timeToEmptyMs === 0
        ? 'now'
        : `in ~${humanMs(f.timeToEmptyMs)} (${f.emptyAt}, from the ${f.basis} pace)`;
  return [
    ['pace', pace],
    ['empty', empty],
  ];
}

function humanMs(ms: number): string {
  if (ms < 90_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 90 * 60_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}
