/**
 * All-or-nothing carts (issue 27): 16 concurrent callers, each cart 3 lines (1 unit each) over the
 * same 3 hot sales, on SQLite, PostgreSQL and Redis, as interleaved rounds. Per round and store:
 *
 * - raw: the same cart with the bare driver in one transaction/script (bench/lib/raw-carts.ts);
 * - 3 × reserve: three separate `sales.reserve` calls one after another (what a caller does
 *   without carts; it is not all-or-nothing: a refusal on line 3 leaves lines 1–2 held);
 * - holdCart: dibs `sales.holdCart`, one step.
 *
 * and the same three with the confirm: raw hold + raw confirm, 3 × (reserve + confirm) and
 * holdCart + confirmCart. Units are carts/s; every run is checked afterwards (each sale held or
 * sold exactly one unit per cart, dibs' audit clean).
 *
 *   npm run bench -- carts [--quick]      (BENCH_CARTS carts per run, BENCH_ROUNDS rounds)
 *
 * Everything runs in throw-away files, schemas and key prefixes, removed at the end.
 */
import { openDibs, type Dibs } from '../src/index.js';
import { summarise, timeOps, type RunStats } from './lib/measure.js';
import { postgresRawCarts, redisRawCarts, sqliteRawCarts, type RawCarts } from './lib/raw-carts.js';
import { interleave, loadNow, perSecond, printRatios, ratio, type Ratio } from './lib/rounds.js';
import { BENCH_PG, onEachStore, type StoreKind } from './lib/stores.js';

const QUICK = process.argv.includes('--quick');
const CARTS = Number(process.env.BENCH_CARTS ?? (QUICK ? 300 : 1000));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 3 : 5));
const CALLERS = 16;
const LINES = 3;
const TTL_MS = 600_000;
const HOUR = 3_600_000;
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres,redis').split(',') as StoreKind[];

export async function main(): Promise<void> {
  const rows: Ratio[] = [];
  await onEachStore('carts', STORES, async (label, store) => {
    rows.push(...(await benchStore(label, store)));
  });
  printRatios(
    `Carts of ${LINES} lines over the same ${LINES} sales, ${CALLERS} callers, ${CARTS} carts per run, ${ROUNDS} interleaved rounds (${QUICK ? 'quick' : 'full'})`,
    rows,
  );
}

async function benchStore(label: string, store: string): Promise<Ratio[]> {
  const dibs = await openDibs(store);
  const raw = await openRaw(store);
  try {
    const d = dibsCarts(dibs);
    // untimed: connections, prepared statements, script cache, JIT on every path
    await rawRun(raw, 100, false);
    await d.separate(100, false);
    await d.cart(100, false);
    const before = loadNow();
    const [rawHold, separate, cart, rawConfirm, separateConfirm, cartConfirm] = await interleave(ROUNDS, [
      { label: 'raw hold', run: () => rawRun(raw, CARTS, false) },
      { label: '3 × reserve', run: () => d.separate(CARTS, false) },
      { label: 'holdCart', run: () => d.cart(CARTS, false) },
      { label: 'raw hold + confirm', run: () => rawRun(raw, CARTS, true) },
      { label: '3 × (reserve + confirm)', run: () => d.separate(CARTS, true) },
      { label: 'holdCart + confirmCart', run: () => d.cart(CARTS, true) },
    ]);
    const load = `${before} → ${loadNow()}`;
    const row = (what: string, base: RunStats[], mine: RunStats[]) =>
      ratio(`${label}: ${what}`, '—', 'carts/s', base, mine, perSecond, load);
    return [
      row('holdCart vs raw transaction', rawHold!, cart!),
      row('holdCart vs 3 × reserve', separate!, cart!),
      row('holdCart + confirmCart vs raw hold + confirm', rawConfirm!, cartConfirm!),
      row('holdCart + confirmCart vs 3 × (reserve + confirm)', separateConfirm!, cartConfirm!),
    ];
  } finally {
    await raw.close().catch(() => {});
    await dibs.close();
  }
}

/** The raw baseline on the store `onEachStore` handed out (its own file, schema or key prefix beside dibs'). */
async function openRaw(store: string): Promise<RawCarts> {
  if (store.startsWith('sqlite:')) return sqliteRawCarts(store.slice('sqlite:'.length).replace(/\.db$/, '-raw.db'));
  const url = new URL(store);
  // as many connections as dibs opens by default (poolSize 10): the same concurrency on both sides
  if (url.protocol.startsWith('postgres'))
    return postgresRawCarts(BENCH_PG, `${url.searchParams.get('schema')}_raw`, 10);
  return redisRawCarts(`${url.protocol}//${url.host}${url.pathname}`, url.searchParams.get('prefix')!);
}

let runs = 0;

/** `carts` raw carts (with their confirm) on fresh sales; checks the counters afterwards. */
async function rawRun(raw: RawCarts, carts: number, confirm: boolean): Promise<RunStats> {
  const sales = await raw.newSales(LINES, carts);
  const tag = `r${++runs}`;
  const run = await timeOps(carts, CALLERS, async (i) => {
    if (!(await raw.hold(`${tag}-${i}`, sales, `user-${i}`))) throw new Error(`raw cart ${i} refused`);
    if (confirm) await raw.confirm(`${tag}-${i}`);
  });
  for (const sale of sales) {
    const { held, sold } = await raw.counts(sale);
    const expected = confirm ? { held: 0, sold: carts } : { held: carts, sold: 0 };
    if (held !== expected.held || sold !== expected.sold)
      throw new Error(`raw sale ${sale}: held ${held}, sold ${sold}; expected ${JSON.stringify(expected)}`);
  }
  return summarise(`raw ${confirm ? 'hold + confirm' : 'hold'}`, run.latencies, run.seconds);
}

/** dibs' two ways to take the 3 lines: separate reserves, or one cart. */
function dibsCarts(dibs: Dibs) {
  const newSales = (cap: number) =>
    Promise.all(
      Array.from({ length: LINES }, async (_, line) => {
        const sale = await dibs.sales.create({
          sku: `CART-${++runs}-${line}`,
          startsAt: new Date().toISOString(),
          endsAt: new Date(Date.now() + HOUR).toISOString(),
          cap,
          perCustomerLimit: 1,
        });
        return sale.id;
      }),
    );
  /** Every customer got one unit of every sale, nothing else; the audit is clean. */
  const check = async (sales: string[], carts: number, confirm: boolean) => {
    for (const id of sales) {
      const { stats } = await dibs.sales.get(id);
      const audit = await dibs.sales.audit(id);
      const expected = confirm ? { held: 0, sold: carts } : { held: carts, sold: 0 };
      if (stats.held !== expected.held || stats.sold !== expected.sold || audit.length)
        throw new Error(
          `dibs sale ${id}: ${JSON.stringify(stats)}, expected ${JSON.stringify(expected)}, audit ${JSON.stringify(audit)}`,
        );
    }
  };
  return {
    async separate(carts: number, confirm: boolean): Promise<RunStats> {
      const sales = await newSales(carts);
      const run = await timeOps(carts, CALLERS, async (i) => {
        const holds: string[] = [];
        for (const sale of sales) holds.push((await dibs.sales.reserve(sale, `user-${i}`, 1, TTL_MS)).hold.id);
        if (confirm) for (const hold of holds) await dibs.sales.confirm(hold);
      });
      await check(sales, carts, confirm);
      return summarise(`3 × reserve${confirm ? ' + 3 × confirm' : ''}`, run.latencies, run.seconds);
    },
    async cart(carts: number, confirm: boolean): Promise<RunStats> {
      const sales = await newSales(carts);
      const run = await timeOps(carts, CALLERS, async (i) => {
        const { cart } = await dibs.sales.holdCart({
          customer: `user-${i}`,
          lines: sales.map((sale) => ({ sale, quantity: 1 })),
          ttlMs: TTL_MS,
        });
        if (confirm) await dibs.sales.confirmCart(cart.id);
      });
      await check(sales, carts, confirm);
      return summarise(`holdCart${confirm ? ' + confirmCart' : ''}`, run.latencies, run.seconds);
    },
  };
}
