/**
 * Grouped sale steps (shared/group-queue.ts says why and how requests group): the buys,
 * reservations and confirmations of one sale waiting in this process at the same time are served
 * by ONE statement (sale-group.sql `stepGroup`). One hot sale row serialises every step of the
 * sale; grouped, the row lock and the commit flush are paid once per group instead of once per
 * buyer. Each request is still decided by the same server-side step as a single one, in arrival
 * order, each seeing the ones before it. Confirmations share the groups of buys and reservations:
 * in separate groups a reserve + confirm paid the sale's lock and commit twice as often.
 *
 * A new order or hold is answered from the statement itself (its id, the request, the step's
 * clock); what the statement cannot describe — a replayed key's stored result, a replaced hold,
 * a confirmation's order — is read back after the commit, one statement for the whole group.
 */
import type pg from 'pg';
import type { HoldRowOf, OrderRowOf } from '../shared/sale-rows.js';
import { GroupQueue, type Waiting } from '../shared/group-queue.js';
import { loadQueries } from '../shared/sql-files.js';
import { query, queryPrepared } from './connection.js';

const G = loadQueries(new URL('./sale-group.sql', import.meta.url), [
  'stepGroup',
  'ordersByIds',
  'holdsByIds',
  'saleOfHold',
]);

/** A sale_orders row. */
export type OrderRow = OrderRowOf<Date>;

/** A sale_holds row. */
export type HoldRow = HoldRowOf<Date>;

/** One buy (ttlMs null) or reservation of a sale. */
export interface TakeRequest {
  customer: string;
  quantity: number;
  key: string | null;
  newId: string;
  ttlMs: number | null;
}

/** The one-row answer of `sale_take`. */
export interface TakeRow {
  /** 'ok', 'replay', 'not_found', or a refusal's reason id (core/refusals.ts). */
  outcome: string;
  result_id: string | null;
  key_kind: 'buy' | 'reserve' | null;
  key_customer: string | null;
  key_quantity: number | null;
  /** A refusal's context, named as its reason names it. */
  ctx: Record<string, unknown> | null;
}

/** The one-row answer of `sale_confirm`. */
export interface ConfirmRow {
  /** 'ok', 'replay', 'not_found', or a refusal's reason id (core/refusals.ts). */
  outcome: string;
  /** The order (ok, replay). */
  result_id: string | null;
  /** A refusal's context, named as its reason names it. */
  ctx: Record<string, unknown> | null;
}

/** A step's answer with the order or hold it points at (undefined: none, or lost after the commit). */
export interface Answered<Row, Rec> {
  row: Row;
  record: Rec | undefined;
}

interface ConfirmRequest {
  hold: string;
  orderId: string;
}

/** A request of a sale's group: a buy or reservation, or a confirmation. */
type StepRequest = ({ confirm: false } & TakeRequest) | ({ confirm: true } & ConfirmRequest);

type StepAnswer = Answered<TakeRow, OrderRow | HoldRow> | Answered<ConfirmRow, OrderRow>;

/** Holds reserved through this process, remembered with their sale so a confirmation needs no lookup. */
const MAX_REMEMBERED_HOLDS = 50_000;

export class SaleGrouper {
  private readonly steps: GroupQueue<StepRequest, StepAnswer>;
  /** hold id → its sale (a hold's sale never changes); only a shortcut, forgotten when full. */
  private readonly holdSales = new Map<string, string>();

  constructor(
    private readonly pool: pg.Pool,
    options: { groupMax: number },
  ) {
    // Two groups of a sale in flight: while one commits (holding the row lock), the next is
    // already queued on the lock.
    const policy = { max: options.groupMax, concurrency: 2 };
    this.steps = new GroupQueue(policy, (sale, group) => this.runSteps(sale, group));
  }

  take(sale: string, request: TakeRequest): Promise<Answered<TakeRow, OrderRow | HoldRow>> {
    return this.steps.add(sale, { confirm: false, ...request }) as Promise<Answered<TakeRow, OrderRow | HoldRow>>;
  }

  /** Confirms a hold in a group of its sale's confirmations; null when the hold does not exist. */
  async confirm(hold: string, orderId: string): Promise<Answered<ConfirmRow, OrderRow> | null> {
    let sale = this.holdSales.get(hold);
    if (sale === undefined) {
      sale = (await query<{ sale_id: string }>(this.pool, G.saleOfHold, [hold])).rows[0]?.sale_id;
      if (sale === undefined) return null;
    }
    const answered = (await this.steps.add(sale, { confirm: true, hold, orderId })) as Answered<ConfirmRow, OrderRow>;
    this.holdSales.delete(hold);
    return answered;
  }

  private async runSteps(sale: string, group: readonly Waiting<StepRequest, StepAnswer>[]): Promise<void> {
    const r = group.map((w) => w.request);
    const rows = await this.statement<
      TakeRow & {
        i: string;
        at: Date;
        expires_at: Date | null;
        order_customer: string | null;
        order_quantity: number | null;
      }
    >('dibs_sale_step_group', G.stepGroup, [
      sale,
      r.map((x) => (x.confirm ? null : x.customer)),
      r.map((x) => (x.confirm ? null : x.quantity)),
      r.map((x) => (x.confirm ? null : x.key)),
      r.map((x) => (x.confirm ? x.orderId : x.newId)),
      r.map((x) => (x.confirm ? null : x.ttlMs)),
      r.map((x) => (x.confirm ? x.hold : null)),
    ]);
    const answers = rows.map((row) => {
      const request = r[Number(row.i) - 1]!;
      if (request.confirm) {
        // A new order answered with its customer and quantity (functions/sale_confirm.sql); a
        // function of an older build answers without them, and that order is read back.
        const fresh = row.outcome === 'ok' && row.result_id === request.orderId && row.order_customer !== null;
        const record: OrderRow | undefined = fresh
          ? {
              id: request.orderId,
              sale_id: sale,
              customer: row.order_customer!,
              quantity: row.order_quantity!,
              hold_id: request.hold,
              created_at: row.at,
            }
          : undefined;
        return { row, record: record as OrderRow | HoldRow | undefined, request };
      }
      if (row.outcome !== 'ok' || row.result_id !== request.newId)
        return { row, record: undefined as OrderRow | HoldRow | undefined, request };
      const record: OrderRow | HoldRow =
        request.ttlMs === null
          ? {
              id: row.result_id,
              sale_id: sale,
              customer: request.customer,
              quantity: request.quantity,
              hold_id: null,
              created_at: row.at,
            }
          : {
              id: row.result_id,
              sale_id: sale,
              customer: request.customer,
              quantity: request.quantity,
              status: 'active',
              expires_at: row.expires_at!,
              created_at: row.at,
              order_id: null,
            };
      return { row, record, request };
    });
    // The rest point at stored results: a confirmation's replayed order, a replayed key's result
    // (of its own kind) or a replaced hold.
    const orders: string[] = [];
    const holds: string[] = [];
    for (const { row, record, request } of answers) {
      if (record || (row.outcome !== 'ok' && row.outcome !== 'replay')) continue;
      const kind = request.confirm
        ? 'buy'
        : row.outcome === 'replay'
          ? row.key_kind
          : request.ttlMs === null
            ? 'buy'
            : 'reserve';
      (kind === 'buy' ? orders : holds).push(row.result_id!);
    }
    const stored = await this.readBack(orders, holds);
    for (const { row, record, request } of answers) {
      const answer = record ?? (row.result_id === null ? undefined : stored.get(row.result_id));
      if (!request.confirm && request.ttlMs !== null && answer && row.outcome === 'ok') this.remember(answer.id, sale);
      group[Number(row.i) - 1]!.resolve({ row, record: answer } as StepAnswer);
    }
  }

  private remember(hold: string, sale: string): void {
    if (this.holdSales.size >= MAX_REMEMBERED_HOLDS) this.holdSales.clear();
    this.holdSales.set(hold, sale);
  }

  private async statement<R extends pg.QueryResultRow>(name: string, text: string, values: unknown[]): Promise<R[]> {
    return (await queryPrepared<R>(this.pool, name, text, values)).rows;
  }

  private async readBack(orders: string[], holds: string[]): Promise<Map<string, OrderRow | HoldRow>> {
    const found = new Map<string, OrderRow | HoldRow>();
    if (orders.length > 0)
      for (const o of await this.statement<OrderRow>('dibs_sale_orders_by_ids', G.ordersByIds, [orders]))
        found.set(o.id, o);
    if (holds.length > 0)
      for (const h of await this.statement<HoldRow>('dibs_sale_holds_by_ids', G.holdsByIds, [holds]))
        found.set(h.id, h);
    return found;
  }
}
