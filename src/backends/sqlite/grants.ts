/**
 * Tiered mode's grant ledger on SQLite. Every step is one write transaction (SQLite has one
 * writer at a time), built from sales.ts' helpers so the window, limit, key and hold rules are
 * the very ones of the ledger path.
 */
import { refusal } from '../../core/refusals.js';
import { notFound } from '../../core/errors.js';
import type { SaleViolation } from '../../core/sales/backend.js';
import {
  grantViolations,
  type GrantAuditRow,
  type GrantedTake,
  type GrantLedger,
  type GrantOutcome,
} from '../../core/sales/grants.js';
import type { Order } from '../../core/sales/types.js';
import { loadQueries } from '../shared/sql-files.js';
import { prepareAll, read, write, type Db, type SqliteOptions, type Statements } from './database.js';
import { toOrder, type OrderRow, type SqliteSales } from './sales.js';

const Q = loadQueries(new URL('./grants.sql', import.meta.url), [
  'later',
  'revokeOpen',
  'revokeNewer',
  'moveEscrow',
  'insertGrant',
  'grantById',
  'useGrant',
  'shrinkGrant',
  'expiredGrantSales',
  'auditGrants',
  'grantsMisused',
  'orderById',
]);

interface GrantRow {
  id: number;
  sale_id: string;
  size: number;
  used: number;
  revoked_at: string | null;
}

export class SqliteGrants implements GrantLedger {
  private readonly stmt: Statements<typeof Q>;

  constructor(
    private readonly db: Db,
    private readonly options: SqliteOptions,
    private readonly sales: SqliteSales,
  ) {
    this.stmt = prepareAll(db, Q);
  }

  async grant(
    saleId: string,
    size: number,
    ttlMs: number,
    revokeAll: boolean,
    newest: string | null = null,
  ): Promise<GrantOutcome> {
    return write(this.db, this.options, () => {
      const now = this.sales.now();
      this.sales.snapshot(saleId, now); // not_found; expires stale holds
      this.revoke(saleId, revokeAll, now);
      if (newest !== null) this.revokeNewer(saleId, newest, now);
      const { row, status } = this.sales.snapshot(saleId, now);
      // Every unit sold: Redis may answer sold_out itself for a while.
      if (status === 'sold_out')
        return { outcome: 'empty', escrow: row.escrow, perCustomerLimit: row.per_customer_limit, endsAt: row.ends_at };
      if (status !== 'live') return { outcome: 'not_live', status };
      if (row.cap === null || this.sales.hasWaitingRoom(saleId)) return { outcome: 'ledger_only' };
      const left = Math.min(size, row.cap - row.sold - row.held - row.escrow);
      if (left <= 0)
        return { outcome: 'empty', escrow: row.escrow, perCustomerLimit: row.per_customer_limit, endsAt: row.ends_at };
      const expiresAt = (this.stmt.later.get(ttlMs) as { at: string }).at;
      const { id } = this.stmt.insertGrant.get({ sale: saleId, size: left, expiresAt, now }) as { id: number };
      this.stmt.moveEscrow.run({ sale: saleId, n: left });
      return {
        outcome: 'ok',
        grantId: String(id),
        size: left,
        perCustomerLimit: row.per_customer_limit,
        endsAt: row.ends_at,
      };
    });
  }

  async takeGranted(
    saleId: string,
    grantId: string,
    customer: string,
    quantity: number,
    key: string | null,
    orderId: string,
  ): Promise<GrantedTake> {
    return write(this.db, this.options, (): GrantedTake => {
      const now = this.sales.now();
      const replay = this.sales.replay(saleId, key, 'buy', customer, quantity);
      if (replay) return { outcome: 'replay', order: this.order(replay.result_id)! };
      const row = this.sales.liveSale(saleId, now);
      // A room enabled while this grant was out: its units sell only through tickets now.
      if (this.sales.hasWaitingRoom(saleId)) throw refusal('sale_ticket_required', { sale: saleId });
      this.sales.assertWithinLimit(row, customer, quantity);
      if (this.stmt.useGrant.run({ grant: Number(grantId), sale: saleId, quantity }).changes === 0)
        return { outcome: 'revoked' };
      this.stmt.moveEscrow.run({ sale: saleId, n: -quantity });
      const order = this.sales.insertOrder(row, customer, quantity, null, now, orderId, Number(grantId));
      if (key !== null) this.sales.insertKey(saleId, key, 'buy', customer, quantity, order.id);
      return { outcome: 'ok', order: toOrder(order) };
    });
  }

  async closeGrant(grantId: string, unused: number): Promise<number> {
    return write(this.db, this.options, () => {
      const grant = this.stmt.grantById.get(Number(grantId)) as GrantRow | undefined;
      if (!grant || grant.revoked_at !== null) return 0;
      const n = Math.min(unused, grant.size - grant.used);
      if (n <= 0) return 0;
      this.stmt.shrinkGrant.run({ grant: grant.id, n });
      this.stmt.moveEscrow.run({ sale: grant.sale_id, n: -n });
      return n;
    });
  }

  async revokeGrants(saleId: string, newerThan?: string): Promise<number> {
    return write(this.db, this.options, () =>
      newerThan === undefined
        ? this.revoke(saleId, true, this.sales.now())
        : this.revokeNewer(saleId, newerThan, this.sales.now()),
    );
  }

  async expireGrants(limit: number): Promise<number> {
    return write(this.db, this.options, () => {
      const now = this.sales.now();
      let units = 0;
      for (const { sale_id: sale } of this.stmt.expiredGrantSales.all(now, limit) as { sale_id: string }[])
        units += this.revoke(sale, false, now);
      return units;
    });
  }

  async getOrder(orderId: string): Promise<Order | null> {
    return read(this.options, () => this.order(orderId));
  }

  async auditGrants(saleId: string): Promise<SaleViolation[]> {
    return read(this.options, () =>
      this.db
        .transaction(() => {
          const row = this.stmt.auditGrants.get({ sale: saleId }) as GrantAuditRow | undefined;
          if (!row) throw notFound('sale', saleId);
          return grantViolations(
            saleId,
            row,
            this.stmt.grantsMisused.all({ sale: saleId }) as { id: string; used: number; ordered: number }[],
          );
        })
        .deferred(),
    );
  }

  private order(id: string): Order | null {
    const row = this.stmt.orderById.get(id) as OrderRow | undefined;
    return row ? toOrder(row) : null;
  }

  /** Inside a write: revokes the open grants made after grant `newest` (a rollback of Redis' state orphaned them). */
  private revokeNewer(saleId: string, newest: string, now: string): number {
    if (!/^\d{1,15}$/.test(newest)) return 0;
    let units = 0;
    for (const { unused } of this.stmt.revokeNewer.all({ sale: saleId, newest: Number(newest), now }) as {
      unused: number;
    }[])
      units += unused;
    if (units > 0) this.stmt.moveEscrow.run({ sale: saleId, n: -units });
    return units;
  }

  /** Inside a write: revokes open grants (all, or expired ones) and returns their unused units to the sale. */
  private revoke(saleId: string, all: boolean, now: string): number {
    let units = 0;
    for (const { unused } of this.stmt.revokeOpen.all({ sale: saleId, all: all ? 1 : 0, now }) as { unused: number }[])
      units += unused;
    if (units > 0) this.stmt.moveEscrow.run({ sale: saleId, n: -units });
    return units;
  }
}
