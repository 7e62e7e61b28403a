/**
 * Grouped buys. Buys of one sale waiting in this process at the same time are served by ONE
 * transaction on the sale, each judged exactly as if alone, in arrival order, against the state
 * the ones before it left (sold, held, the customer's units). Firestore serialises transactions
 * on a document, so N concurrent buys of a flash sale would otherwise be N transactions colliding
 * on the sale document (aborted and retried, on the emulator for minutes); grouped, a process
 * has one transaction in flight per sale and the buys that arrive meanwhile wait for the next.
 *
 * A group never holds the same customer or key twice (shared/take-group.ts): a repeat waits for
 * the next group and sees the first one's order. Batching is opportunistic, never timed: an idle
 * process runs a buy at once.
 */
import { isDibsError } from '../../core/errors.js';
import type { BuyResult } from '../../core/sales/types.js';
import { takeGroup } from '../shared/take-group.js';
import type { Layout } from './layout.js';
import { judgeBuy, sameRequest } from './sale-rules.js';
import type { OrderDoc, SaleKeyDoc } from './sale-records.js';
import { toOrder } from './sale-records.js';
import { SaleStep } from './sale-step.js';
import type { TxRunner } from './transactions.js';

export interface BuyRequest {
  claimant: string;
  quantity: number;
  key: string | null;
}

interface Waiting {
  request: BuyRequest;
  resolve(result: BuyResult): void;
  reject(error: unknown): void;
}

type Outcome = { ok: true; value: BuyResult } | { ok: false; error: unknown };

/** Most buys one transaction serves. */
const GROUP_MAX = 50;

export class BuyGrouper {
  private readonly queues = new Map<string, Waiting[]>();
  private readonly running = new Set<string>();

  constructor(
    private readonly layout: Layout,
    private readonly runner: TxRunner,
  ) {}

  buy(saleId: string, customer: string, quantity: number, key: string | null): Promise<BuyResult> {
    return new Promise<BuyResult>((resolve, reject) => {
      const queue = this.queues.get(saleId) ?? [];
      queue.push({ request: { claimant: customer, quantity, key }, resolve, reject });
      this.queues.set(saleId, queue);
      this.dispatch(saleId);
    });
  }

  private dispatch(saleId: string): void {
    if (this.running.has(saleId)) return;
    const queue = this.queues.get(saleId);
    if (!queue || queue.length === 0) {
      this.queues.delete(saleId);
      return;
    }
    const group = takeGroup(queue, GROUP_MAX);
    this.running.add(saleId);
    void this.runGroup(saleId, group).finally(() => {
      this.running.delete(saleId);
      this.dispatch(saleId);
    });
  }

  private async runGroup(saleId: string, group: Waiting[]): Promise<void> {
    try {
      const outcomes = await buyGroup(this.layout, this.runner, saleId, group.map((w) => w.request));
      group.forEach((w, i) => {
        const outcome = outcomes[i]!;
        if (outcome.ok) w.resolve(outcome.value);
        else w.reject(outcome.error);
      });
    } catch (error) {
      for (const w of group) w.reject(error);
    }
  }
}

/** One transaction for a group of buys of one sale (pairwise distinct customers and keys). */
async function buyGroup(layout: Layout, runner: TxRunner, saleId: string, requests: readonly BuyRequest[]): Promise<Outcome[]> {
  return runner.run(async (tx) => {
    const step = await SaleStep.open(tx, layout, saleId);
    const keyed = requests.filter((r) => r.key !== null);
    const keySnaps = await step.prepare(
      requests.map((r) => r.claimant),
      keyed.map((r) => step.refs.key(r.key!)),
    );
    const stored = new Map(keyed.map((r, i) => [r.key!, keySnaps[i]!.data() as SaleKeyDoc | undefined]));
    const outcomes: Outcome[] = [];
    for (const r of requests) {
      try {
        const prior = r.key !== null ? stored.get(r.key) : undefined;
        if (prior) {
          sameRequest(r.key!, prior, 'buy', r.claimant, r.quantity);
          // a read after decisions but before any write: the step writes only at commit
          const order = (await tx.get(step.refs.order(prior.r))).data() as OrderDoc;
          outcomes.push({ ok: true, value: { order: toOrder(saleId, order), replayed: true } });
          continue;
        }
        judgeBuy(step.sale, step.nowIso, r.claimant, step.unitsOf(r.claimant).units, r.quantity);
        const order = step.insertOrder(r.claimant, r.quantity, null);
        if (r.key !== null) step.set(step.refs.key(r.key), { k: 'buy', c: r.claimant, q: r.quantity, r: order.id } satisfies SaleKeyDoc);
        outcomes.push({ ok: true, value: { order: toOrder(saleId, order), replayed: false } });
      } catch (error) {
        if (!isDibsError(error)) throw error;
        outcomes.push({ ok: false, error });
      }
    }
    step.commit();
    return outcomes;
  });
}
