import type { Command } from 'commander';
import type { LimitAlgorithm, LimitDecision, LimitDefinition } from '../../core/limits/types.js';
import { block, intOption, output, withDibs } from '../context.js';

const describe = (d: LimitDefinition) =>
  block([
    ['name', d.name],
    ['algorithm', d.algorithm],
    ['limit', `${d.limit} per ${d.periodMs} ms`],
    ...(d.algorithm === 'token-bucket' ? [['burst', d.burst] as [string, unknown]] : []),
    ...(d.algorithm === 'sliding-window' ? [['segments', d.segments] as [string, unknown]] : []),
    ['updated', d.updatedAt],
  ]);

const decided = (d: LimitDecision) =>
  d.allowed ? `allowed (${d.remaining} left)` : `denied: retry in ${d.retryAfterMs} ms (${d.remaining} left)`;

export function limitsCommand(program: Command): void {
  const limits = program
    .command('limits')
    .description('rate limits and quotas shared by every instance: define, take, inspect');

  limits
    .command('create <name>')
    .description('define a limit: token-bucket, sliding-window or quota')
    .requiredOption('--algorithm <name>', 'token-bucket | sliding-window | quota')
    .requiredOption('--limit <n>', 'admissions per period', intOption('--limit'))
    .requiredOption(
      '--period <ms>',
      "the period in ms (a quota's periods are aligned to the Unix epoch: 86400000 = a UTC day)",
      intOption('--period'),
    )
    .option('--burst <n>', 'token-bucket: most admitted at once (default --limit)', intOption('--burst'))
    .option('--segments <n>', 'sliding-window: buckets per period (default 10)', intOption('--segments'))
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  $ dibs limits create chat-api --algorithm token-bucket --limit 30 --period 1000 --burst 5',
        '  $ dibs limits create sms --algorithm quota --limit 10000 --period 86400000',
        '  $ dibs limits create search --algorithm sliding-window --limit 100 --period 60000',
      ].join('\n'),
    )
    .action(
      async (
        name: string,
        opts: { algorithm: string; limit: number; period: number; burst?: number; segments?: number },
        command: Command,
      ) => {
        await withDibs(command, async (dibs) => {
          const def = await dibs.limits.create({
            name,
            algorithm: opts.algorithm as LimitAlgorithm,
            limit: opts.limit,
            periodMs: opts.period,
            ...(opts.burst !== undefined ? { burst: opts.burst } : {}),
            ...(opts.segments !== undefined ? { segments: opts.segments } : {}),
          });
          output(command, def, () => describe(def));
        });
      },
    );

  limits
    .command('update <name>')
    .description("change a limit (a new algorithm or period restarts every key's count)")
    .option('--algorithm <name>', 'token-bucket | sliding-window | quota')
    .option('--limit <n>', 'admissions per period', intOption('--limit'))
    .option('--period <ms>', 'the period in ms', intOption('--period'))
    .option('--burst <n>', 'token-bucket: most admitted at once', intOption('--burst'))
    .option('--segments <n>', 'sliding-window: buckets per period', intOption('--segments'))
    .addHelpText('after', '\nExample:\n  $ dibs limits update chat-api --limit 60')
    .action(
      async (
        name: string,
        opts: { algorithm?: string; limit?: number; period?: number; burst?: number; segments?: number },
        command: Command,
      ) => {
        await withDibs(command, async (dibs) => {
          const def = await dibs.limits.update(name, {
            ...(opts.algorithm !== undefined ? { algorithm: opts.algorithm as LimitAlgorithm } : {}),
            ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
            ...(opts.period !== undefined ? { periodMs: opts.period } : {}),
            ...(opts.burst !== undefined ? { burst: opts.burst } : {}),
            ...(opts.segments !== undefined ? { segments: opts.segments } : {}),
          });
          output(command, def, () => describe(def));
        });
      },
    );

  limits
    .command('list')
    .description('every limit')
    .action(async (_opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const all = await dibs.limits.list();
        output(command, all, () =>
          all.length
            ? all.map((d) => `${d.name}\t${d.algorithm}\t${d.limit}/${d.periodMs} ms`).join('\n')
            : 'no limits',
        );
      });
    });

  limits
    .command('get <name>')
    .description('one limit')
    .action(async (name: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const def = await dibs.limits.get(name);
        output(command, def, () => describe(def));
      });
    });

  limits
    .command('delete <name>')
    .description("delete a limit and its keys' counts")
    .action(async (name: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        await dibs.limits.delete(name);
        output(command, { deleted: name }, () => `deleted ${name}`);
      });
    });

  limits
    .command('take <name>')
    .description('take units now; exits 3 when denied (prints the exact wait)')
    .option('--key <key>', 'what the limit counts separately (a user, an API key)', '')
    .option('-n, --count <n>', 'units', intOption('--count'), 1)
    .option('--wait <ms>', 'wait up to this long for the units instead of answering denied', intOption('--wait'), 0)
    .addHelpText(
      'after',
      '\nExamples:\n  $ dibs limits take chat-api --key team-42\n  $ dibs limits take sms --count 3 --wait 5000',
    )
    .action(async (name: string, opts: { key: string; count: number; wait: number }, command: Command) => {
      await withDibs(command, async (dibs) => {
        const d =
          opts.wait > 0
            ? await dibs.limits.waitFor(name, opts.count, { key: opts.key, waitMs: opts.wait })
            : await dibs.limits.take(name, opts.count, { key: opts.key });
        output(command, d, () => decided(d));
        if (!d.allowed) process.exitCode = 3;
      });
    });

  limits
    .command('peek <name>')
    .description(
      "a key's allowance now, without taking: units left, or the wait for --count; exits 3 when they would be denied",
    )
    .option('--key <key>', 'the key (default: the shared allowance)', '')
    .option('-n, --count <n>', 'units asked about', intOption('--count'), 1)
    .addHelpText(
      'after',
      '\nExamples:\n  $ dibs limits peek chat-api --key team-42\n  $ dibs limits peek sms --count 3 --json',
    )
    .action(async (name: string, opts: { key: string; count: number }, command: Command) => {
      await withDibs(command, async (dibs) => {
        const d = await dibs.limits.peek(name, opts.count, { key: opts.key });
        output(command, d, () =>
          d.allowed ? `${d.remaining + opts.count} left (nothing taken)` : `${decided(d)} (nothing taken)`,
        );
        if (!d.allowed) process.exitCode = 3;
      });
    });

  limits
    .command('reset <name>')
    .description('give one key its full allowance back')
    .option('--key <key>', 'the key', '')
    .action(async (name: string, opts: { key: string }, command: Command) => {
      await withDibs(command, async (dibs) => {
        await dibs.limits.reset(name, { key: opts.key });
        output(command, { reset: name, key: opts.key }, () => `reset ${name}${opts.key ? ` key ${opts.key}` : ''}`);
      });
    });
}
