/**
 * A child that holds `key` with runExclusive (argv: store, key, ttlMs) and reports on stdout:
 * `held <fence>` once granted, then `lost <fence>` when its signal fires, then exits.
 * The parent SIGSTOPs it past its TTL to simulate a GC pause / stalled VM.
 */
import { openDibs } from '../../src/index.js';

const [store, key, ttl] = process.argv.slice(2) as [string, string, string];
const dibs = await openDibs(store);
try {
  await dibs.locks.runExclusive(
    key,
    async (signal, lease) => {
      process.stdout.write(`held ${lease.fence}\n`);
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      // The late write a stalled holder would attempt: the parent's fence guard must reject it.
      process.stdout.write(`lost ${lease.fence}\n`);
    },
    { ttlMs: Number(ttl) },
  );
} finally {
  await dibs.close();
}
