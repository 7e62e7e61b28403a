/**
 * Turns on sales within this process: a transaction that writes a sale document runs only in
 * that sale's turn. Every sale step commits on the condition that its sale documents are still
 * the ones it read (optimistic, sale-step.ts), so two transactions of one process over the same
 * sale that overlap in time cannot both commit: one of them only pays round trips to lose. A
 * grouped single-sale step (sale-queue.ts) takes its sale's turn; a cart takes the turns of every
 * line's sale, in sale-id order, so two carts never wait on each other in a circle.
 *
 * Why it matters: a cart's commit is guarded by up to a handful of hot sale documents, each moved
 * by every grouped buy of every process. Without turns a cart also lost to its own process' buys
 * of the same sales, and at 80 carts in 4 processes (issue #27) carts took up to 14 attempts.
 * Other processes still race it: TxRunner bounds that (transactions.ts).
 *
 * Turns are FIFO per sale; a sale with no one waiting or running leaves nothing behind.
 */
export class SaleTurns {
  /** Per sale: settles when the last one queued for its turn is done. */
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `fn` holding the turn of every sale in `saleIds`. */
  async run<T>(saleIds: readonly string[], fn: () => Promise<T>): Promise<T> {
    const releases: (() => void)[] = [];
    try {
      // one at a time, in id order: a turn is never held while waiting for a smaller id
      for (const id of [...new Set(saleIds)].sort()) releases.push(await this.take(id));
      return await fn();
    } finally {
      for (const release of releases) release();
    }
  }

  /** Sales with someone waiting or running (0 once everything has settled). */
  get active(): number {
    return this.tails.size;
  }

  private async take(id: string): Promise<() => void> {
    const before = this.tails.get(id) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((resolve) => (done = resolve));
    const tail = before.then(() => mine);
    this.tails.set(id, tail);
    await before;
    return () => {
      done();
      if (this.tails.get(id) === tail) this.tails.delete(id);
    };
  }
}
