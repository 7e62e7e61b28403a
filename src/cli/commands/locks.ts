import type { Command } from 'commander';
import { parseShellToken, shellLease } from '../../service/lease-token.js';
import { block, intOption, output, withDibs } from '../context.js';

export function locksCommand(program: Command): void {
  const locks = program.command('locks').description('leases and semaphores: inspect holders, acquire, renew, release');

  locks
    .command('inspect <key>')
    .description('holders (token prefixes only), last fence and waiters of a lock')
    .action(async (key: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const info = await dibs.semaphores.inspect(key);
        output(command, info, () =>
          block([
            ['key', info.key],
            ['last fence', info.lastFence],
            ['waiters', info.waiters],
            [
              'holders',
              info.holders.length
                ? info.holders.map((h) => `${h.tokenPrefix}… fence ${h.fence} until ${h.expiresAt}`).join('; ')
                : 'none',
            ],
          ]),
        );
      });
    });

  locks
    .command('acquire <key>')
    .description('take a lease (prints it as JSON: keep the token to renew or release)')
    .option('--ttl <ms>', 'lease time to live', intOption('--ttl'), 30_000)
    .option('--wait <ms>', 'how long to wait for it', intOption('--wait'), 0)
    .option('--limit <n>', 'holders allowed at once (a semaphore when above 1)', intOption('--limit'), 1)
    .option('--fair', "wait in the store's line: FIFO across every process and instance", false)
    .addHelpText('after', '\nExample:\n  $ dibs locks acquire nightly-report --ttl 60000 --wait 5000 --fair')
    .action(
      async (key: string, opts: { ttl: number; wait: number; limit: number; fair: boolean }, command: Command) => {
        await withDibs(command, async (dibs) => {
          const lease = await dibs.semaphores.acquire(key, opts.limit, {
            ttlMs: opts.ttl,
            waitMs: opts.wait,
            fair: opts.fair,
          });
          process.stdout.write(`${JSON.stringify(shellLease(lease), null, 2)}\n`);
        });
      },
    );

  for (const action of ['renew', 'release'] as const) {
    locks
      .command(`${action} <key>`)
      .description(action === 'renew' ? 'extend a lease you hold' : 'give a lease back')
      .requiredOption('--token <token>', 'the token acquire printed')
      .option(
        '--ttl <ms>',
        'new time to live (renew; default: the TTL the lease was acquired with)',
        intOption('--ttl'),
      )
      .action(async (key: string, opts: { token: string; ttl?: number }, command: Command) => {
        await withDibs(command, async (dibs) => {
          const { token, limit } = parseShellToken(opts.token, '--token');
          const lease = { key, token, limit: limit ?? 1 } as Parameters<typeof dibs.semaphores.release>[0];
          if (action === 'release') {
            await dibs.semaphores.release(lease);
            output(command, { released: key }, () => `released ${key}`);
          } else {
            const renewed = shellLease(
              await dibs.semaphores.renew(lease, opts.ttl !== undefined ? { ttlMs: opts.ttl } : {}),
            );
            output(command, renewed, () => `renewed ${key} until ${renewed.expiresAt} (fence ${renewed.fence})`);
          }
        });
      });
  }

  const counters = program
    .command('counters')
    .description('sharded counters: exact reads, shards added under contention');
  counters
    .command('get <name>')
    .description('the exact value')
    .action(async (name: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const value = await dibs.counters.get(name);
        output(
          command,
          value,
          () => `${name} = ${value.value} (${value.shards} shard${value.shards === 1 ? '' : 's'})`,
        );
      });
    });
  for (const action of ['incr', 'decr'] as const) {
    counters
      .command(`${action} <name>`)
      .description(action === 'incr' ? 'add to a counter' : 'subtract from a counter')
      .option('--by <n>', 'amount', intOption('--by'), 1)
      .action(async (name: string, opts: { by: number }, command: Command) => {
        await withDibs(command, async (dibs) => {
          const value =
            action === 'incr' ? await dibs.counters.incr(name, opts.by) : await dibs.counters.decr(name, opts.by);
          output(command, value, () => `${name} = ${value.value}`);
        });
      });
  }
  counters
    .command('reset <name>')
    .description('set a counter back to zero')
    .action(async (name: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        await dibs.counters.reset(name);
        output(command, { reset: name }, () => `${name} = 0`);
      });
    });
}
