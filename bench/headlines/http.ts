/**
 * Headlines: `dibs serve` (SQLite) vs the library in-process and vs a bare Fastify route calling
 * the library (bench/http.ts), one round = every side once on fresh stores, rounds in a row (each
 * round runs its sides back to back, so the same-round ratio compares like with like).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropHttpStores, httpSides } from '../http.js';
import type { RunStats } from '../lib/measure.js';
import { loadNow, perSecond, ratio, type Ratio } from '../lib/rounds.js';
import type { Sizes } from './sizes.js';

const stats = (
  label: string,
  r: { perSecond: number; p50: number; p99: number; ok?: number },
  ops: number,
): RunStats => ({ label, ops, seconds: ops / r.perSecond, perSecond: r.perSecond, p50: r.p50, p99: r.p99 });

export async function http(sizes: Sizes): Promise<Ratio[]> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-bench-summary-http-'));
  try {
    const library: RunStats[] = [];
    const wrapper: RunStats[] = [];
    const service: RunStats[] = [];
    const load = loadNow();
    for (let r = 0; r < sizes.rounds; r++) {
      const sides = await httpSides(dir, sizes.claims, Math.min(2000, sizes.claims));
      library.push(sides.library);
      wrapper.push(stats('bare route + library', sides.wrapper, sizes.claims));
      service.push(stats('dibs serve', sides.service, sizes.claims));
    }
    const during = `${load} → ${loadNow()}`;
    return [
      ratio(
        'HTTP `dibs serve` vs the library in-process (SQLite)',
        '—',
        'claims/s',
        library,
        service,
        perSecond,
        during,
      ),
      ratio(
        'HTTP `dibs serve` vs a bare Fastify route calling the library (SQLite)',
        '≥ 0.95×',
        'claims/s',
        wrapper,
        service,
        perSecond,
        during,
      ),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await dropHttpStores();
  }
}
