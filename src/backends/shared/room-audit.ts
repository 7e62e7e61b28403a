/**
 * I4 for a waiting room: the counters of its tickets by status, kept in the same atomic step as
 * every ticket's status (so `waitingRooms.get` reads them instead of every ticket), equal the
 * tickets themselves.
 */
import type { SaleViolation } from '../../core/sales/backend.js';
import type { TicketStatus } from '../../core/sales/waiting-room.js';

export const TICKET_STATUSES: readonly TicketStatus[] = ['waiting', 'admitted', 'used', 'expired', 'sold_out'];

/** Findings where `counters` (the room's) differ from `ledger` (the tickets, counted); missing counts are 0. */
export function roomCounterViolations(
  sale: string,
  counters: Partial<Record<string, number>>,
  ledger: Partial<Record<string, number>>,
): SaleViolation[] {
  const violations: SaleViolation[] = [];
  for (const status of TICKET_STATUSES) {
    const counted = Number(counters[status] ?? 0);
    const tickets = Number(ledger[status] ?? 0);
    if (counted !== tickets)
      violations.push({
        invariant: 'I4',
        sale,
        expected: tickets,
        actual: counted,
        message: `waiting room counter of ${status} tickets says ${counted} but ${tickets} tickets are ${status}`,
      });
  }
  return violations;
}

/** The tickets counted by status, from a `GROUP BY status` query's rows. */
export function ticketsByStatus(rows: readonly { status: string; n: number }[]): Record<string, number> {
  const counted: Record<string, number> = {};
  for (const { status, n } of rows) counted[status] = n;
  return counted;
}
