import type { Command } from 'commander';
import { DibsError } from '../../core/errors.js';
import type { Cart } from '../../core/sales/types.js';
import { block, intOption, output, withDibs } from '../context.js';

function describeCart(cart: Cart): string {
  return block([
    ['cart', cart.id],
    ['customer', cart.customer],
    ['status', cart.status],
    ['expires', cart.expiresAt],
    ...cart.lines.map((l, i): [string, unknown] => [
      `line ${i}`,
      `${l.quantity} × ${l.saleId} (hold ${l.holdId}${l.orderId ? `, order ${l.orderId}` : ''})`,
    ]),
  ]);
}

/** `<sale>:<quantity>` or `<sale>` (one unit). */
function parseLine(text: string, i: number): { sale: string; quantity: number } {
  const at = text.lastIndexOf(':');
  if (at < 0) return { sale: text, quantity: 1 };
  const quantity = Number(text.slice(at + 1));
  if (!Number.isInteger(quantity))
    throw new DibsError('invalid_input', `lines.${i}: '${text}' is not <sale>:<quantity>`, { field: `lines.${i}` });
  return { sale: text.slice(0, at), quantity };
}

export function cartsCommand(program: Command): void {
  const carts = program
    .command('carts')
    .description('hold units of several sales at once — every line or none — then confirm or cancel them as one');

  carts
    .command('hold <customer> <lines...>')
    .description('hold every line (<sale>:<quantity>) in one step, or nothing: a refusal names the line')
    .option('--ttl <seconds>', 'how long to hold the cart', intOption('--ttl'), 600)
    .option('--key <key>', 'idempotency key: a retry answers the same cart')
    .addHelpText(
      'after',
      `
Examples:
  $ dibs carts hold alice tee-drop:2 mug-drop:1 --ttl 900 --key checkout-8812
  $ dibs carts confirm cart_3f9c…      # every line becomes an order
  $ dibs carts cancel cart_3f9c…       # every line is given back`,
    )
    .action(async (customer: string, lines: string[], opts: { ttl: number; key?: string }, command: Command) => {
      await withDibs(command, async (dibs) => {
        const { cart, replayed } = await dibs.sales.holdCart({
          customer,
          lines: lines.map(parseLine),
          ttlMs: opts.ttl * 1000,
          ...(opts.key ? { idempotencyKey: opts.key } : {}),
        });
        output(command, { cart, replayed }, () => describeCart(cart) + (replayed ? '\n(replayed)' : ''));
      });
    });

  carts
    .command('show <cart>')
    .description('a cart and its lines')
    .addHelpText('after', '\nExample:\n  $ dibs carts show cart_3f9c… --json')
    .action(async (id: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const cart = await dibs.sales.getCart(id);
        output(command, cart, () => describeCart(cart));
      });
    });

  carts
    .command('confirm <cart>')
    .description('turn every line into an order, in one step (a confirmed cart answers its orders again)')
    .addHelpText('after', '\nExample:\n  $ dibs carts confirm cart_3f9c…')
    .action(async (id: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const result = await dibs.sales.confirmCart(id);
        output(command, result, () =>
          result.orders.map((o) => `order ${o.id}: ${o.quantity} unit(s) of ${o.saleId}`).join('\n'),
        );
      });
    });

  carts
    .command('cancel <cart>')
    .description('give every line back, in one step')
    .addHelpText('after', '\nExample:\n  $ dibs carts cancel cart_3f9c…')
    .action(async (id: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const cart = await dibs.sales.cancelCart(id);
        output(command, cart, () => describeCart(cart));
      });
    });
}
