/** `dibs sales room …`: the fair waiting room of a flash sale from the command line. */
import { InvalidArgumentError, type Command } from 'commander';
import type { Ticket, WaitingRoom } from '../../core/sales/waiting-room.js';
import { block, intOption, output, withDibs } from '../context.js';

const rate = (raw: string) => {
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new InvalidArgumentError('expected a number of tickets per second above 0.');
  return value;
};

function describeRoom(room: WaitingRoom): string {
  return block([
    ['sale', room.saleId],
    ['admits', `${room.admitPerSecond}/s, ${room.windowMs / 1000} s to reserve`],
    ['fair start', room.fairStart ? 'yes: the pre-queue is drawn at the opening' : 'no: arrival order'],
    ['verification', room.verification ? 'required before admission' : 'no'],
    [
      'draw',
      room.draw === null
        ? 'not yet (at the opening)'
        : room.draw.seed === null
          ? `none: ${room.draw.preQueue} early tickets in arrival order`
          : `seed ${room.draw.seed} over ${room.draw.preQueue} early tickets, ${room.draw.drawnAt}`,
    ],
    [
      'tickets',
      Object.entries(room.tickets)
        .map(([status, n]) => `${status} ${n}`)
        .join(' · '),
    ],
  ]);
}

function describeTicket(t: Ticket): string {
  return block([
    ['ticket', `#${t.number} of ${t.customer}`],
    ['place', t.place ?? 'drawn at the opening'],
    ['status', t.verified ? t.status : `${t.status}, not verified`],
    ...(t.status === 'waiting'
      ? [['ahead', `${t.position} (about ${Math.ceil((t.estimatedWaitMs ?? 0) / 1000)} s)`] as [string, unknown]]
      : []),
    ...(t.admittedUntil ? [['reserve by', t.admittedUntil] as [string, unknown]] : []),
    ['token', t.token],
  ]);
}

export function waitingRoomCommand(sales: Command): void {
  const room = sales
    .command('room')
    .description('a fair waiting room: tickets in arrival order, admitted at a rate while units remain');

  room
    .command('enable <sale>')
    .description('put a capped sale behind a waiting room (or change its settings)')
    .option('--rate <n>', 'tickets admitted per second', rate, 10)
    .option('--window <seconds>', 'how long an admitted customer has to reserve', intOption('--window'), 120)
    .option('--fair-start', 'who joins before the sale opens gets a random place, drawn once at the opening')
    .option('--no-fair-start', 'arrival order for the pre-queue again (left out: as it is; a new room: arrival order)')
    .option('--verification', 'admit a ticket only once verified (`dibs sales room verify`)')
    .option('--no-verification', 'admit without verification again (left out: as it is; a new room: none)')
    .addHelpText(
      'after',
      `
Examples:
  $ dibs sales room enable sale_… --rate 50 --window 120
  $ dibs sales room enable sale_… --rate 50 --fair-start                # random order for the pre-queue
  $ dibs sales room enable sale_… --rate 50 --fair-start --verification # and a check before admission
  $ dibs sales room enable sale_… --rate 80 --no-verification           # other settings stay as they are`,
    )
    .action(
      async (
        sale: string,
        opts: { rate: number; window: number; fairStart?: boolean; verification?: boolean },
        command: Command,
      ) => {
        await withDibs(command, async (dibs) => {
          const r = await dibs.waitingRooms.enable(sale, {
            admitPerSecond: opts.rate,
            windowMs: opts.window * 1000,
            ...(opts.fairStart === undefined ? {} : { fairStart: opts.fairStart }),
            ...(opts.verification === undefined ? {} : { verification: opts.verification }),
          });
          output(command, r, () => describeRoom(r));
        });
      },
    );

  room
    .command('show <sale>')
    .description("tickets by status and the opening's draw (runs admission first)")
    .addHelpText(
      'after',
      `
Example:
  $ dibs sales room show sale_… --json   # draw.seed re-derives the pre-queue's order (drawOrder in the library)`,
    )
    .action(async (sale: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const r = await dibs.waitingRooms.get(sale);
        output(command, r, () => describeRoom(r));
      });
    });

  room
    .command('join <sale> <customer>')
    .description("take a ticket (joining again returns the customer's ticket)")
    .action(async (sale: string, customer: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const t = await dibs.waitingRooms.join(sale, customer);
        output(command, t, () => describeTicket(t));
      });
    });

  room
    .command('ticket <sale> <customer> <token>')
    .description("a ticket's status and position")
    .action(async (sale: string, customer: string, token: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const t = await dibs.waitingRooms.ticket(sale, customer, token);
        output(command, t, () => describeTicket(t));
      });
    });

  room
    .command('verify <sale> <customer> <token>')
    .description(
      'mark a ticket verified once your own check of the customer passed (a room with --verification admits only verified tickets)',
    )
    .addHelpText('after', '\nExample:\n  $ dibs sales room verify sale_… ann 17.Qm9…')
    .action(async (sale: string, customer: string, token: string, _opts: unknown, command: Command) => {
      await withDibs(command, async (dibs) => {
        const t = await dibs.waitingRooms.verify(sale, customer, token);
        output(command, t, () => describeTicket(t));
      });
    });

  room
    .command('reserve <sale> <customer> <token>')
    .description('hold units with an admitted ticket; confirm with `dibs sales confirm <hold>`')
    .option('--quantity <n>', 'units', intOption('--quantity'), 1)
    .option('--ttl <seconds>', 'how long to hold them', intOption('--ttl'), 600)
    .action(
      async (
        sale: string,
        customer: string,
        token: string,
        opts: { quantity: number; ttl: number },
        command: Command,
      ) => {
        await withDibs(command, async (dibs) => {
          const { hold } = await dibs.waitingRooms.reserve(sale, customer, token, opts.quantity, opts.ttl * 1000);
          output(command, hold, () => `hold ${hold.id}: ${hold.quantity} unit(s) until ${hold.expiresAt}`);
        });
      },
    );
}
