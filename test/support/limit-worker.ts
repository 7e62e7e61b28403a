/**
 * One OS process of the rate-limit storm. argv: JSON { store, limits: names, key, durationMs,
 * concurrency }. Runs `concurrency` loops that each take 1 unit of every limit in turn, as fast as
 * the store answers, for `durationMs`; prints one JSON line per decision:
 * { l: limit, a: 1 | 0 (admitted), t: the store's clock of the decision }. A take that fails with
 * `unavailable` is printed as { l, e } (not admitted: its outcome is unknown to no one — the
 * store answered nothing). Exits non-zero on any other error.
 */
import { openDibs } from '../../src/index.js';

interface Config { store: string; limits: string[]; key: string; durationMs: number; concurrency: number }
const config = JSON.parse(process.argv[2]!) as Config;
const dibs = await openDibs(config.store);
const lines: string[] = [];
try {
  // every worker starts when the parent says go (all of them opened), so the demand overlaps from the first take
  // warm up first (a connection's first request can take seconds: Firestore's client, a TLS handshake)
  for (const l of config.limits) await dibs.limits.get(l);
  process.stdout.write('ready\n');
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
  process.stdin.pause();
  const end = Date.now() + config.durationMs;
  await Promise.all(Array.from({ length: config.concurrency }, async (_, loop) => {
    for (let i = loop; Date.now() < end; i++) {
      const l = config.limits[i % config.limits.length]!;
      try {
        const d = await dibs.limits.take(l, 1, { key: config.key });
        lines.push(JSON.stringify({ l, a: d.allowed ? 1 : 0, t: d.at }));
      } catch (error) {
        if ((error as { code?: string }).code !== 'unavailable') throw error;
        lines.push(JSON.stringify({ l, e: 'unavailable' }));
      }
    }
  }));
} finally {
  await dibs.close();
}
process.stdout.write(lines.join('\n') + '\n');
