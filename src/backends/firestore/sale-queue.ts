/**
 * Grouped sale steps. Buys, reservations, confirmations and hold cancellations of one sale that
 * wait in this process at the same time are served by ONE transaction on the sale (a SaleStep),
 * each judged exactly as if alone, in arrival order, against what the ones before it left (sold,
 * held, the customer's units, keys, holds — the step's cache). Firestore serialises transactions
 * on a document, so N concurrent requests of a flash sale would otherwise be N transactions
 * colliding on the sale document; grouped (shared/group-queue.ts says why and how), a process has
 * one transaction in flight per sale, and requests that arrive meanwhile wait for the next one.
 *
 * The step is optimistic (sale-step.ts): its reads take no locks and its commit is guarded by the
 * sale document's update time, so groups of different processes never wait on each other's
 * locks — the loser of a race reads again and judges its whole group again. (Pessimistic
 * read-modify-write transactions on one document from several clients deadlock on lock upgrades
 * in the emulator and wait seconds for its lock timeout; measured: 40 increments by 4 clients
 * took 155 s as transactions, 3.6 s as guarded commits.)
 *
 * Only a transaction that fails as a whole (contention: retried by TxRunner with every request
 * of the group judged again; or an error that is not a refusal) affects the whole group. A group
 * that refuses and writes nothing has no commit to check its reads, so its refusals stand only if
 * the sale document has not moved since (SaleStep.refusalsStand, the carts' rule); else the whole
 * group is judged again, as after a lost race.
 */
import { isDibsError } from '../../core/errors.js';
import type { Layout } from './layout.js';
import { SaleStep } from './sale-step.js';
import { RETRY, type TxRunner } from './transactions.js';
import type { SaleTurns } from './sale-turns.js';
import { GroupQueue, type Waiting } from '../shared/group-queue.js';

/** Most requests one transaction serves. */
const GROUP_MAX = 50;

/** A request of a group: what it reads (prefetched in one round) and its body. */
export interface SaleRequest<T = unknown> {
  customers?: string[];
  keys?: string[];
  holds?: string[];
  run(step: SaleStep): Promise<T>;
}

/** A request as queued: `at`, when it was asked (the contention bound counts from the group's oldest). */
type Queued = SaleRequest & { at: number };

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

export class SaleQueue {
  /** One group in flight per sale, started at once: an idle sale's first request runs alone. */
  private readonly queue: GroupQueue<Queued, unknown>;

  constructor(
    private readonly layout: Layout,
    private readonly runner: TxRunner,
    private readonly turns: SaleTurns,
  ) {
    this.queue = new GroupQueue({ max: GROUP_MAX, concurrency: 1, joinTurn: false }, (saleId, group) =>
      this.runGroup(saleId, group),
    );
  }

  submit<T>(saleId: string, request: SaleRequest<T>): Promise<T> {
    return this.queue.add(saleId, { ...request, at: Date.now() }) as Promise<T>;
  }

  private async runGroup(saleId: string, group: readonly Waiting<Queued, unknown>[]): Promise<void> {
    // in the sale's turn: a cart of this process over the same sale at the same time voids this step or is voided
    const outcomes = await this.turns.run([saleId], () =>
      this.runner.run<Outcome[]>(
        async (tx, _n, attempt) => {
          const step = await SaleStep.open(tx, this.layout, saleId, 'optimistic');
          await step.prefetch({
            customers: group.flatMap((w) => w.request.customers ?? []),
            keys: group.flatMap((w) => w.request.keys ?? []),
            holds: group.flatMap((w) => w.request.holds ?? []),
          });
          const answers: Outcome[] = [];
          for (const w of group) {
            try {
              answers.push({ ok: true, value: await w.request.run(step) });
            } catch (error) {
              if (!isDibsError(error)) throw error;
              answers.push({ ok: false, error });
            }
          }
          // a refusal decided on reads that no commit validates stands only if they were one state
          if (answers.some((a) => !a.ok) && !(await step.refusalsStand())) return RETRY;
          step.commit(attempt);
          return answers;
        },
        undefined,
        { optimistic: true, since: Math.min(...group.map((w) => w.request.at)) },
      ),
    );
    group.forEach((w, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) w.resolve(outcome.value);
      else w.reject(outcome.error);
    });
  }
}
