/**
 * Headlines: `dibs serve` vs the library in-process, vs a bare Fastify route calling the library,
 * and vs that route checking an API key first (the fair baseline: the service's auth is not
 * optional), on SQLite (BENCH_BACKEND=postgres or redis for the others; bench/http.ts). Servers
 * start once and warm up; each round runs every side once on them, back to back, in an order that
 * turns around every round (httpRounds), so the same-round ratio compares like with like.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropHttpStores, httpRounds } from '../http.js';
import type { RunStats } from '../lib/measure.js';
import { loadNow, perSecond, ratio, type Ratio } from '../lib/rounds.js';
import type { Sizes } from './sizes.js';

type HttpStats = RunStats & { processUs: number };
const stats = (
  label: string,
  r: { perSecond: number; p50: number; p99: number; processUs: number },
  ops: number,
): HttpStats => ({
  label,
  ops,
  seconds: ops / r.perSecond,
  perSecond: r.perSecond,
  p50: r.p50,
  p99: r.p99,
  processUs: r.processUs,
});
/** CPU of the serving process per request (µs): far less moved by the rest of the machine than claims/s. */
const cpuPerRequest = (r: RunStats) => (r as HttpStats).processUs;
const STORE =
  process.env.BENCH_BACKEND === 'postgres' ? 'PostgreSQL' : process.env.BENCH_BACKEND === 'redis' ? 'Redis' : 'SQLite';

export async function http(sizes: Sizes): Promise<Ratio[]> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-bench-summary-http-'));
  try {
    const load = loadNow();
    const runs = await httpRounds(dir, sizes.rounds, sizes.claims, Math.min(2000, sizes.claims));
    const wrapper = runs.wrapper.map((r) => stats('bare route + library', r, sizes.claims));
    const keyed = runs.keyed.map((r) => stats('bare route + key check + library', r, sizes.claims));
    const service = runs.service.map((r) => stats('dibs serve', r, sizes.claims));
    const during = `${load} → ${loadNow()}`;
    // BENCH_AB_DIST: this build's `dibs serve` against another build's, slice by slice.
    const other = runs.serviceB.map((r) => stats('dibs serve, BENCH_AB_DIST build', r, sizes.claims));
    const ab =
      other.length > 0
        ? [
            ratio(
              `HTTP \`dibs serve\`, this build vs the BENCH_AB_DIST build (${STORE})`,
              '—',
              'claims/s',
              other,
              service,
              perSecond,
              during,
            ),
            ratio(
              `HTTP \`dibs serve\`, this build vs the BENCH_AB_DIST build: CPU per request (${STORE})`,
              '—',
              'µs/request',
              other,
              service,
              cpuPerRequest,
              during,
            ),
          ]
        : [];
    return [
      ...ab,
      ratio(
        `HTTP \`dibs serve\` vs the library in-process (${STORE})`,
        '—',
        'claims/s',
        runs.library,
        service,
        perSecond,
        during,
      ),
      ratio(
        `HTTP \`dibs serve\` vs a bare Fastify route calling the library (${STORE})`,
        '≥ 0.95×',
        'claims/s',
        wrapper,
        service,
        perSecond,
        during,
      ),
      ratio(
        `HTTP \`dibs serve\` vs a bare Fastify route checking an API key, calling the library (${STORE})`,
        '≥ 0.95×',
        'claims/s',
        keyed,
        service,
        perSecond,
        during,
      ),
      ratio(
        `HTTP \`dibs serve\` vs the bare route: CPU per request of the serving process (${STORE})`,
        '—',
        'µs/request',
        wrapper,
        service,
        cpuPerRequest,
        during,
      ),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await dropHttpStores();
  }
}
