/**
 * `npm run bench -- firestore`: the published Firebase coupon design (bench/lib/published-coupons.ts,
 * a faithful baseline) vs dibs on the SAME Firestore emulator, same data, one run, at 16 and 64
 * concurrent claimers (one process each side: claims in flight stand for concurrent function
 * instances). Reports claims/s, transaction attempts per claim, p50/p99 and one-per-user
 * violations. dibs runs twice: with grouped claims (the default) and with grouping off
 * (`groupMax=1`: one transaction per claim, like one request per serverless instance).
 *
 * Uses FIRESTORE_EMULATOR_HOST when set, else starts the official emulator (test/support/firestore.ts).
 * Env: BENCH_FS_COUPONS (default 2000), BENCH_FS_CONCURRENCY (default "16,64"),
 * BENCH_FS_PUBLISHED_CLAIMS / BENCH_FS_DIBS_CLAIMS (claims per run as a multiple of the
 * concurrency; default 2 and 8), BENCH_FS_CAP_S (stop issuing claims after this many seconds, default 120),
 * BENCH_FS_ONLY=dibs (skip the published design).
 */
import { loadavg } from 'node:os';
import { Firestore } from '@google-cloud/firestore';
import { openBackend } from '../src/backends/registry.js';
import type { FirestoreBackend } from '../src/backends/firestore/index.js';
import { Dibs } from '../src/index.js';
import { PublishedCoupons } from './lib/published-coupons.js';
import { percentile } from './lib/measure.js';
import { startFirestoreEmulator, type OwnedEmulator } from '../test/support/firestore.js';

const COUPONS = Number(process.env.BENCH_FS_COUPONS ?? 2000);
const LEVELS = (process.env.BENCH_FS_CONCURRENCY ?? '16,64').split(',').map(Number);
const PUBLISHED_X = Number(process.env.BENCH_FS_PUBLISHED_CLAIMS ?? 2);
const DIBS_X = Number(process.env.BENCH_FS_DIBS_CLAIMS ?? 8);
const CAP_MS = Number(process.env.BENCH_FS_CAP_S ?? 120) * 1000;
/** BENCH_FS_ONLY=dibs skips the (slow) published design. */
const DIBS_ONLY = process.env.BENCH_FS_ONLY === 'dibs';

interface Row {
  label: string;
  concurrency: number;
  claims: number;
  failed: number;
  seconds: number;
  attempts: number;
  p50: number;
  p99: number;
  violations: number;
}

/** `count` claims by distinct users, `concurrency` in flight, no new claim after CAP_MS. */
async function drive(
  count: number,
  concurrency: number,
  claim: (user: string) => Promise<boolean>,
): Promise<{ ok: number; failed: number; seconds: number; latencies: number[] }> {
  const latencies: number[] = [];
  let next = 0;
  let ok = 0;
  let failed = 0;
  const reasons = new Map<string, number>();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count && performance.now() - started < CAP_MS) {
        const user = `user-${next++}`;
        const t = performance.now();
        const won = await claim(user).catch((error: unknown) => {
          const reason = String((error as Error)?.message ?? error).slice(0, 80);
          reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
          return false;
        });
        latencies.push(performance.now() - t);
        if (won) ok++;
        else failed++;
      }
    }),
  );
  if (reasons.size > 0) console.log(`    errors: ${JSON.stringify(Object.fromEntries(reasons))}`);
  return { ok, failed, seconds: (performance.now() - started) / 1000, latencies: latencies.sort((a, b) => a - b) };
}

async function published(projectId: string, concurrency: number, codes: string[]): Promise<Row> {
  const db = new Firestore({ projectId });
  try {
    const baseline = new PublishedCoupons(db, `published-${concurrency}-${Date.now()}`);
    await baseline.seed(codes);
    const run = await drive(
      PUBLISHED_X * concurrency,
      concurrency,
      async (u) => (await baseline.dbClaimRandomCoupon(u)) !== null,
    );
    const doubled = await baseline.usersWithSeveral();
    return {
      label: 'published design',
      concurrency,
      claims: run.ok,
      failed: run.failed,
      seconds: run.seconds,
      attempts: baseline.attempts,
      p50: percentile(run.latencies, 50),
      p99: percentile(run.latencies, 99),
      violations: doubled.size,
    };
  } finally {
    await db.terminate();
  }
}

async function dibsRun(label: string, store: string, concurrency: number, codes: string[]): Promise<Row> {
  const backend = (await openBackend(store)) as FirestoreBackend;
  const dibs = new Dibs(backend);
  try {
    await dibs.pools.create({ name: 'bench', perClaimantLimit: 1 });
    await dibs.pools.importCodes('bench', codes);
    const before = backend.transactionCounters.attempts;
    const run = await drive(
      DIBS_X * concurrency,
      concurrency,
      async (u) => (await dibs.pools.claim('bench', u)).status === 'claimed',
    );
    const attempts = backend.transactionCounters.attempts - before;
    const violations = await dibs.pools.audit('bench');
    return {
      label,
      concurrency,
      claims: run.ok,
      failed: run.failed,
      seconds: run.seconds,
      attempts,
      p50: percentile(run.latencies, 50),
      p99: percentile(run.latencies, 99),
      violations: violations.length,
    };
  } finally {
    await dibs.close();
  }
}

export async function main(): Promise<void> {
  let owned: OwnedEmulator | null = null;
  if (!process.env.FIRESTORE_EMULATOR_HOST) owned = await startFirestoreEmulator();
  const projectId = owned?.projectId ?? `bench-${Date.now().toString(36)}`;
  const codes = Array.from({ length: COUPONS }, (_, i) => `COUPON-${i}`);
  const rows: Row[] = [];
  console.log(
    `emulator ${process.env.FIRESTORE_EMULATOR_HOST}; ${COUPONS} coupons per run; load average at start ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' / ')}`,
  );
  try {
    for (const c of LEVELS) {
      if (!DIBS_ONLY) rows.push(await published(projectId, c, codes));
      rows.push(
        await dibsRun('dibs (grouped claims)', `firestore://${projectId}?prefix=bench-g-${c}-${Date.now()}`, c, codes),
      );
      rows.push(
        await dibsRun(
          'dibs (groupMax=1)',
          `firestore://${projectId}?prefix=bench-1-${c}-${Date.now()}&groupMax=1`,
          c,
          codes,
        ),
      );
      for (const r of rows.slice(-3))
        console.log(`  ${r.label} @${c}: ${r.claims} claims in ${r.seconds.toFixed(1)} s`);
    }
  } finally {
    await owned?.stop();
  }
  console.log(
    `\nload average at end ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' / ')}`,
  );
  console.log(
    '| run | claimers | claims | failed | claims/s | tx attempts/claim | p50 ms | p99 ms | one-per-user violations | vs published |',
  );
  console.log(
    '(failed: the published design answered "no coupon" (all 10 ranges contended or empty) or threw; dibs: errors. dibs attempts count one per group transaction attempt.)',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    const base = rows.find((b) => b.concurrency === r.concurrency && b.label === 'published design');
    const rate = r.claims / r.seconds;
    console.log(
      `| ${r.label} | ${r.concurrency} | ${r.claims} | ${r.failed} | ${rate.toFixed(1)} | ${(r.attempts / Math.max(1, r.claims)).toFixed(2)} | ${r.p50.toFixed(0)} | ${r.p99.toFixed(0)} | ${r.violations} | ${base ? `${(rate / (base.claims / base.seconds)).toFixed(1)}×` : '–'} |`,
    );
  }
}
