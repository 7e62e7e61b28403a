/**
 * Checkout throughput per store: `validate` and `redeem` (for an order) next to the claim path, the
 * baseline measured in the same run on the same store — one process, 16 in flight. Then the rest of
 * the lifecycle against the same baseline: a checkout hold and the redeem that consumes it (public
 * codes), and redeems of one multi-use code (every use contends for that one code).
 *
 *   npm run bench -- redeem      (BENCH_REDEEM_OPS, default 5000; BENCH_PG, BENCH_REDIS)
 */
import { openDibs } from '../src/index.js';
import { printTable, summarise, timeOps } from './lib/measure.js';
import { onEachStore } from './lib/stores.js';

const OPS = Number(process.env.BENCH_REDEEM_OPS ?? 5000);
const CONCURRENCY = 16;

async function run(label: string, store: string): Promise<void> {
  const dibs = await openDibs(store);
  try {
    await dibs.pools.create({ name: 'bench-redeem' });
    await dibs.pools.importCodes(
      'bench-redeem',
      Array.from({ length: OPS }, (_, i) => `RD-${i}`),
    );
    const codes = new Array<string>(OPS);
    const claimed = await timeOps(
      OPS,
      CONCURRENCY,
      async (i) => (codes[i] = (await dibs.pools.claim('bench-redeem', `buyer-${i}`)).code!),
    );
    const validated = await timeOps(OPS, CONCURRENCY, (i) =>
      dibs.pools.validate('bench-redeem', codes[i]!, { claimant: `buyer-${i}` }),
    );
    const redeemed = await timeOps(OPS, CONCURRENCY, (i) =>
      dibs.pools.redeem('bench-redeem', codes[i]!, { claimant: `buyer-${i}`, orderId: `order-${i}` }),
    );
    const replayed = await timeOps(OPS, CONCURRENCY, (i) =>
      dibs.pools.redeem('bench-redeem', codes[i]!, { orderId: `order-${i}` }),
    );
    if ((await dibs.pools.stats('bench-redeem')).redeemed !== OPS) throw new Error('not every code was redeemed');
    if ((await dibs.pools.audit('bench-redeem')).length > 0) throw new Error('audit not clean');
    const baseline = summarise('claim (baseline)', claimed.latencies, claimed.seconds);
    printTable(
      `Checkout on ${label}, ${OPS.toLocaleString('en-US')} codes, ${CONCURRENCY} in flight (ratio vs claim)`,
      [
        baseline,
        summarise('validate', validated.latencies, validated.seconds),
        summarise('redeem for an order', redeemed.latencies, redeemed.seconds),
        summarise('redeem again, same order (replay)', replayed.latencies, replayed.seconds),
      ],
      baseline,
    );
    await lifecycle(dibs, label, baseline);
  } finally {
    await dibs.pools.delete('bench-redeem').catch(() => {});
    await dibs.pools.delete('bench-life').catch(() => {});
    await dibs.close();
  }
}

async function lifecycle(
  dibs: Awaited<ReturnType<typeof openDibs>>,
  label: string,
  baseline: ReturnType<typeof summarise>,
): Promise<void> {
  await dibs.pools.create({ name: 'bench-life', publicCodes: true, perClaimantLimit: 1 });
  await dibs.pools.importCodes(
    'bench-life',
    Array.from({ length: OPS }, (_, i) => `HL-${i}`),
  );
  await dibs.pools.addMultiUseCode('bench-life', { code: 'WELCOME', uses: OPS });
  const held = await timeOps(OPS, CONCURRENCY, (i) => dibs.pools.hold('bench-life', `HL-${i}`, `cart-${i}`, 600_000));
  const consumed = await timeOps(OPS, CONCURRENCY, (i) =>
    dibs.pools.redeem('bench-life', `HL-${i}`, { claimant: `cart-${i}`, orderId: `order-${i}` }),
  );
  const multi = await timeOps(OPS, CONCURRENCY, (i) =>
    dibs.pools.redeem('bench-life', 'WELCOME', { claimant: `buyer-${i}`, orderId: `m-${i}` }),
  );
  if ((await dibs.pools.stats('bench-life')).redeemed !== OPS) throw new Error('not every held code was redeemed');
  if ((await dibs.pools.code('bench-life', 'WELCOME')).uses?.used !== OPS) throw new Error('not every use was counted');
  if ((await dibs.pools.audit('bench-life')).length > 0) throw new Error('audit not clean');
  printTable(
    `Holds and multi-use codes on ${label}, ${OPS.toLocaleString('en-US')} ops each, ${CONCURRENCY} in flight (ratio vs claim)`,
    [
      baseline,
      summarise('hold (checkout)', held.latencies, held.seconds),
      summarise('redeem a held code (consumes the hold)', consumed.latencies, consumed.seconds),
      summarise('redeem one multi-use code, new order each', multi.latencies, multi.seconds),
    ],
    baseline,
  );
}

export async function main(): Promise<void> {
  await onEachStore('redeem', ['sqlite', 'postgres', 'redis'], run);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
