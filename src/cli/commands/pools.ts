import { type Command, InvalidArgumentError } from 'commander';
import type { Pool } from '../../core/types.js';
import { block, intOption, output, withDibs } from '../context.js';

export function describePool(pool: Pool): string {
  const s = pool.stats;
  return block([
    ['pool', pool.name],
    ['per claimant', pool.perClaimantLimit],
    ['low stock at', pool.lowStockThreshold],
    ...(pool.startsAt ? [['valid from', pool.startsAt] as [string, unknown]] : []),
    ...(pool.expiresAt ? [['expires', pool.expiresAt] as [string, unknown]] : []),
    ...(pool.maxRedemptions !== null ? [['max redemptions', pool.maxRedemptions] as [string, unknown]] : []),
    ...(pool.maxRedemptionsPerClaimant !== null
      ? [['max per claimant', pool.maxRedemptionsPerClaimant] as [string, unknown]]
      : []),
    ...(pool.publicCodes ? [['public codes', 'yes: redeemable without a claim'] as [string, unknown]] : []),
    ['total', s.total],
    ['free', s.free],
    ['claimed', s.claimed],
    ['redeemed', s.redeemed],
    ['revoked', s.revoked],
    ['created', pool.createdAt],
    ...(Object.keys(pool.metadata).length ? [['metadata', pool.metadata] as [string, unknown]] : []),
  ]);
}

function jsonOption(value: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(value) as unknown;
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
    return parsed as Record<string, unknown>;
  } catch {
    throw new InvalidArgumentError('metadata must be a JSON object, e.g. \'{"campaign":"spring"}\'');
  }
}

export function poolsCommand(program: Command): void {
  const pools = program.command('pools').description('create, list, show, change and delete coupon pools');

  pools
    .command('create <name>')
    .description('create a pool')
    .option('--limit <n>', 'codes one claimant may hold', intOption('--limit'), 1)
    .option('--low-stock <n>', 'record a pool.low_stock event when free codes drop to n', intOption('--low-stock'))
    .option('--metadata <json>', 'free-form JSON object stored with the pool', jsonOption)
    .option('--starts <time>', 'codes are handed out and redeemed only from this ISO 8601 time on')
    .option('--expires <time>', '… and only until this ISO 8601 time (then: expired)')
    .option('--max-redemptions <n>', 'at most n codes of the pool redeemed in all', intOption('--max-redemptions'))
    .option('--max-per-claimant <n>', 'at most n codes redeemed by one claimant', intOption('--max-per-claimant'))
    .option('--public', 'codes never claimed may be redeemed directly (printed or shared codes)')
    .addHelpText(
      'after',
      '\nExamples:\n  $ dibs pools create spring --limit 1 --low-stock 100 --metadata \'{"campaign":"spring"}\'\n  $ dibs pools create bf --starts 2026-11-27T00:00:00Z --expires 2026-11-30T23:59:59Z',
    )
    .action(
      async (
        name: string,
        opts: {
          limit: number;
          lowStock?: number;
          metadata?: Record<string, unknown>;
          starts?: string;
          expires?: string;
          maxRedemptions?: number;
          maxPerClaimant?: number;
          public?: boolean;
        },
        command: Command,
      ) => {
        await withDibs(command, async (dibs) => {
          const pool = await dibs.pools.create({
            name,
            perClaimantLimit: opts.limit,
            lowStockThreshold: opts.lowStock ?? null,
            metadata: opts.metadata ?? {},
            startsAt: opts.starts ?? null,
            expiresAt: opts.expires ?? null,
            maxRedemptions: opts.maxRedemptions ?? null,
            maxRedemptionsPerClaimant: opts.maxPerClaimant ?? null,
            publicCodes: opts.public ?? false,
          });
          output(command, pool, () => `created pool '${pool.name}'\n${describePool(pool)}`);
        });
      },
    );

  pools
    .command('list')
    .description('list pools with their counts')
    .option('--limit <n>', 'page size', intOption('--limit'), 100)
    .option('--after <name>', 'continue after this pool name')
    .action(async (opts: { limit: number; after?: string }, command: Command) => {
      await withDibs(command, async (dibs) => {
        const page = await dibs.pools.list({ limit: opts.limit, ...(opts.after ? { after: opts.after } : {}) });
        output(command, page, () => {
          if (page.items.length === 0) return 'no pools (create one with: dibs pools create <name>)';
          const rows = page.items.map((p) =>
            [p.name, p.stats.total, p.stats.free, p.stats.claimed, p.stats.redeemed].map(String),
          );
          const header = ['pool', 'total', 'free', 'claimed', 'redeemed'];
          const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
          const line = (cells: string[]) =>
            cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
          return [
            line(header),
            ...rows.map(line),
            ...(page.nextCursor ? [`… more: --after ${page.nextCursor}`] : []),
          ].join('\n');
        });
      });
    });

  pools
    .command('show <name>')
    .description('show a pool and its counts')
    .action(async (name: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const pool = await dibs.pools.get(name);
        output(command, pool, () => describePool(pool));
      });
    });

  pools
    .command('update <name>')
    .description("change a pool's limit, low-stock threshold, validity window or metadata")
    .option('--limit <n>', 'codes one claimant may hold (cannot go below what someone holds)', intOption('--limit'))
    .option('--low-stock <n>', 'low-stock threshold', intOption('--low-stock'))
    .option('--no-low-stock', 'turn the low-stock alert off')
    .option('--metadata <json>', 'replace the metadata', jsonOption)
    .option('--starts <time>', "valid from this ISO 8601 time ('none': no start)")
    .option('--expires <time>', "valid until this ISO 8601 time ('none': never expires)")
    .action(
      async (
        name: string,
        opts: {
          limit?: number;
          lowStock?: number | false;
          metadata?: Record<string, unknown>;
          starts?: string;
          expires?: string;
        },
        command: Command,
      ) => {
        await withDibs(command, async (dibs) => {
          const pool = await dibs.pools.update(name, {
            ...(opts.limit !== undefined ? { perClaimantLimit: opts.limit } : {}),
            ...(opts.lowStock === false
              ? { lowStockThreshold: null }
              : opts.lowStock !== undefined
                ? { lowStockThreshold: opts.lowStock }
                : {}),
            ...(opts.metadata ? { metadata: opts.metadata } : {}),
            ...(opts.starts !== undefined ? { startsAt: opts.starts === 'none' ? null : opts.starts } : {}),
            ...(opts.expires !== undefined ? { expiresAt: opts.expires === 'none' ? null : opts.expires } : {}),
          });
          output(command, pool, () => describePool(pool));
        });
      },
    );

  pools
    .command('delete <name>')
    .description('delete a pool with all its codes and claims')
    .requiredOption('--yes', 'confirm: this cannot be undone')
    .action(async (name: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        await dibs.pools.delete(name);
        output(command, { deleted: name }, () => `deleted pool '${name}'`);
      });
    });
}
