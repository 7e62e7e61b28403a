import type { Command } from 'commander';
import type { Sale } from '../../core/sales/types.js';
import { block, EXIT, intOption, output, withDibs } from '../context.js';
import { waitingRoomCommand } from './waiting-room.js';

function describeSale(sale: Sale): string {
  return block([
    ['sale', sale.id],
    ['sku', sale.sku],
    ['status', sale.status],
    ['window', `${sale.startsAt} – ${sale.endsAt}`],
    ['cap', sale.cap ?? 'unlimited'],
    ['per customer', sale.perCustomerLimit],
    ['sold', sale.stats.sold],
    ['held', sale.stats.held],
    ['available', sale.stats.available ?? 'unlimited'],
  ]);
}

export function salesCommand(program: Command): void {
  const sales = program
    .command('sales')
    .description('flash sales: time window, unit cap, per-customer limit, cart holds');
  waitingRoomCommand(sales);

  sales
    .command('create <sku>')
    .description('create a sale (checked first: window, cap, limit ≤ cap, no overlapping sale of the SKU)')
    .requiredOption('--ends <time>', 'end of the window, ISO 8601 (e.g. 2026-11-27T23:59:59Z)')
    .option('--starts <time>', 'start of the window, ISO 8601 (default: now)')
    .option('--cap <units>', 'units for sale (default: unlimited)', intOption('--cap'))
    .option('--limit <units>', 'units one customer may buy', intOption('--limit'), 1)
    .option('--id <id>', 'sale id (default: generated)')
    .addHelpText(
      'after',
      '\nExample:\n  $ dibs sales create TV-55 --starts 2026-11-27T09:00:00Z --ends 2026-11-27T21:00:00Z --cap 100 --limit 1',
    )
    .action(
      async (
        sku: string,
        opts: { ends: string; starts?: string; cap?: number; limit: number; id?: string },
        command: Command,
      ) => {
        await withDibs(command, async (dibs) => {
          const sale = await dibs.sales.create({
            sku,
            startsAt: opts.starts ?? new Date().toISOString(),
            endsAt: opts.ends,
            cap: opts.cap ?? null,
            perCustomerLimit: opts.limit,
            ...(opts.id ? { id: opts.id } : {}),
          });
          output(command, sale, () => describeSale(sale));
        });
      },
    );

  sales
    .command('list')
    .description('list sales')
    .option('--sku <sku>', 'only sales of this SKU')
    .action(async (opts: { sku?: string }, command: Command) => {
      await withDibs(command, async (dibs) => {
        const page = await dibs.sales.list(opts.sku ? { sku: opts.sku } : {});
        output(
          command,
          page,
          () =>
            page.items
              .map((s) => `${s.id}  ${s.sku}  ${s.status}  sold ${s.stats.sold}/${s.cap ?? '∞'}  held ${s.stats.held}`)
              .join('\n') || 'no sales',
        );
      });
    });

  sales
    .command('show <sale>')
    .description('show a sale with sold, held and available units')
    .action(async (id: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const sale = await dibs.sales.get(id);
        output(command, sale, () => describeSale(sale));
      });
    });

  sales
    .command('buy <sale> <customer>')
    .description('buy units outright')
    .option('--quantity <n>', 'units', intOption('--quantity'), 1)
    .option('--key <key>', 'idempotency key')
    .action(async (id: string, customer: string, opts: { quantity: number; key?: string }, command: Command) => {
      await withDibs(command, async (dibs) => {
        const { order, replayed } = await dibs.sales.buy(
          id,
          customer,
          opts.quantity,
          opts.key ? { idempotencyKey: opts.key } : {},
        );
        output(
          command,
          { order, replayed },
          () => `order ${order.id}: ${order.quantity} unit(s) for ${order.customer}${replayed ? ' (replayed)' : ''}`,
        );
      });
    });

  sales
    .command('reserve <sale> <customer>')
    .description('hold units in a cart for a while')
    .option('--quantity <n>', 'units', intOption('--quantity'), 1)
    .option('--ttl <seconds>', 'how long to hold them', intOption('--ttl'), 600)
    .action(async (id: string, customer: string, opts: { quantity: number; ttl: number }, command: Command) => {
      await withDibs(command, async (dibs) => {
        const { hold } = await dibs.sales.reserve(id, customer, opts.quantity, opts.ttl * 1000);
        output(command, hold, () => `hold ${hold.id}: ${hold.quantity} unit(s) until ${hold.expiresAt}`);
      });
    });

  sales
    .command('confirm <hold>')
    .description('turn a hold into an order')
    .action(async (hold: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const { order } = await dibs.sales.confirm(hold);
        output(command, order, () => `order ${order.id}: ${order.quantity} unit(s) for ${order.customer}`);
      });
    });

  sales
    .command('release <hold>')
    .description('cancel a hold and give its units back')
    .action(async (hold: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const released = await dibs.sales.cancelHold(hold);
        output(command, released, () => `hold ${released.id}: ${released.status}`);
      });
    });

  sales
    .command('cancel <sale>')
    .description('stop a sale for good (its holds are released)')
    .action(async (id: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const sale = await dibs.sales.cancel(id);
        output(command, sale, () => describeSale(sale));
      });
    });

  sales
    .command('audit <sale>')
    .description('check sold + held ≤ cap, limits, counters, events and carts; exit code 1 on a violation')
    .action(async (id: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const violations = await dibs.sales.audit(id);
        output(command, { violations }, () =>
          violations.length === 0
            ? `${id}: clean (I2, I3, I4, I7, I9 hold)`
            : violations.map((v) => `${v.invariant}  ${v.message}`).join('\n'),
        );
        if (violations.length > 0) process.exitCode = EXIT.failure;
      });
    });

  sales
    .command('jobs')
    .description(
      'run the background jobs once: activate due sales (notify wishlists), end finished ones, expire stale holds',
    )
    .action(async (_opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const result = {
          activated: await dibs.sales.activateDue(),
          ended: await dibs.sales.endDue(),
          holdsExpired: await dibs.sales.expireHolds(),
        };
        output(command, result, () =>
          block([
            ['activated', result.activated.sales.join(', ') || '-'],
            ['notifications', result.activated.notifications],
            ['ended', result.ended.join(', ') || '-'],
            ['holds expired', result.holdsExpired],
          ]),
        );
      });
    });
}
