/**
 * Tiered mode's grant ledger on PostgreSQL: each step is one statement calling a function of
 * migrations 010, 016 and 017 (sale_grant, sale_take_granted, sale_grant_close, sale_grants_revoke,
 * sale_grants_expire), which locks the sale row first like every other sale step.
 */
import { judgeSaleKey, type SaleKeyKind } from '../../core/model/sales.js';
import type pg from 'pg';
import { notFound } from '../../core/errors.js';
import type { SaleViolation } from '../../core/sales/backend.js';
import {
  grantViolations,
  type GrantAuditRow,
  type GrantedTake,
  type GrantLedger,
  type GrantOutcome,
} from '../../core/sales/grants.js';
import type { Order, SaleStatus } from '../../core/sales/types.js';
import { refusedRow } from './refused.js';
import { loadQueries } from '../shared/sql-files.js';
import { query, withTransaction } from './connection.js';

const Q = loadQueries(new URL('./grants.sql', import.meta.url), [
  'grant',
  'takeGranted',
  'closeGrant',
  'revokeGrants',
  'revokeNewer',
  'expireGrants',
  'orderById',
  'auditGrants',
  'grantsMisused',
]);

interface OrderRow {
  id: string;
  sale_id: string;
  customer: string;
  quantity: number;
  hold_id: string | null;
  created_at: Date;
}

export class PgGrants implements GrantLedger {
  constructor(private readonly pool: pg.Pool) {}

  async grant(
    saleId: string,
    size: number,
    ttlMs: number,
    revokeAll: boolean,
    newest: string | null = null,
  ): Promise<GrantOutcome> {
    const r = (
      await query<{
        outcome: string;
        status: SaleStatus | null;
        grant_id: string | null;
        size: number | null;
        escrow: number | null;
        per_customer_limit: number | null;
        ends_at: Date | null;
      }>(this.pool, Q.grant, [saleId, size, ttlMs, revokeAll, grantIdOrNull(newest)])
    ).rows[0]!;
    switch (r.outcome) {
      case 'not_found':
        throw notFound('sale', saleId);
      case 'not_live':
        return { outcome: 'not_live', status: r.status! };
      case 'ledger_only':
        return { outcome: 'ledger_only' };
      case 'empty':
        return {
          outcome: 'empty',
          escrow: r.escrow!,
          perCustomerLimit: r.per_customer_limit!,
          endsAt: r.ends_at!.toISOString(),
        };
      default:
        return {
          outcome: 'ok',
          grantId: r.grant_id!,
          size: r.size!,
          perCustomerLimit: r.per_customer_limit!,
          endsAt: r.ends_at!.toISOString(),
        };
    }
  }

  async takeGranted(
    saleId: string,
    grantId: string,
    customer: string,
    quantity: number,
    key: string | null,
    orderId: string,
  ): Promise<GrantedTake> {
    const r = (
      await query<{
        outcome: string;
        result_id: string | null;
        key_kind: string | null;
        key_customer: string | null;
        key_quantity: number | null;
        ctx: Record<string, unknown> | null;
      }>(this.pool, Q.takeGranted, [saleId, grantId, customer, quantity, key, orderId])
    ).rows[0]!;
    switch (r.outcome) {
      case 'not_found':
        throw notFound('sale', saleId);
      case 'ok':
        return { outcome: 'ok', order: (await this.getOrder(r.result_id!))! };
      case 'revoked':
        return { outcome: 'revoked' };
      case 'replay':
        judgeSaleKey(
          key!,
          { kind: r.key_kind as SaleKeyKind, customer: r.key_customer!, quantity: r.key_quantity! },
          'buy',
          customer,
          quantity,
        );
        return { outcome: 'replay', order: (await this.getOrder(r.result_id!))! };
      default:
        throw refusedRow(r.outcome, r.ctx, { sale: saleId, customer });
    }
  }

  async closeGrant(grantId: string, unused: number): Promise<number> {
    return (await query<{ n: number }>(this.pool, Q.closeGrant, [grantId, unused])).rows[0]!.n;
  }

  async revokeGrants(saleId: string, newerThan?: string): Promise<number> {
    if (newerThan !== undefined) {
      const newest = grantIdOrNull(newerThan);
      return newest === null ? 0 : (await query<{ n: number }>(this.pool, Q.revokeNewer, [saleId, newest])).rows[0]!.n;
    }
    return (await query<{ n: number }>(this.pool, Q.revokeGrants, [saleId])).rows[0]!.n;
  }

  async expireGrants(limit: number): Promise<number> {
    return (await query<{ n: number }>(this.pool, Q.expireGrants, [limit])).rows[0]!.n;
  }

  async getOrder(orderId: string): Promise<Order | null> {
    const row = (await query<OrderRow>(this.pool, Q.orderById, [orderId])).rows[0];
    return row
      ? {
          id: row.id,
          saleId: row.sale_id,
          customer: row.customer,
          quantity: row.quantity,
          holdId: row.hold_id,
          createdAt: row.created_at.toISOString(),
        }
      : null;
  }

  async auditGrants(saleId: string): Promise<SaleViolation[]> {
    return withTransaction(
      this.pool,
      async (client) => {
        const row = (await client.query<GrantAuditRow>(Q.auditGrants, [saleId])).rows[0];
        if (!row) throw notFound('sale', saleId);
        const misused = (await client.query<{ id: string; used: number; ordered: number }>(Q.grantsMisused, [saleId]))
          .rows;
        return grantViolations(saleId, row, misused);
      },
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
    );
  }
}

/** A grant id as the fast path reports it (digits), or null when it is not one (nothing is revoked then). */
function grantIdOrNull(id: string | null): string | null {
  return id !== null && /^\d{1,18}$/.test(id) ? id : null;
}
