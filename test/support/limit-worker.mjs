/**
 * One OS process of the rate-limit storm. Plain JavaScript, so that with a fresh build it starts
 * on plain Node against dist/ (argv[2] = 'dist'); else it runs under tsx against src/ ('src').
 * argv[3]: JSON { store, limits: names, key, durationMs, concurrency }. Opens the store, warms
 * up, prints `ready`, waits for a line on stdin, then runs `concurrency` loops that each take 1
 * unit of every limit in turn, as fast as the store answers, for `durationMs`; prints one JSON
 * line per decision: { l: limit, a: 1 | 0 (admitted), t: the store's clock of the decision }. A
 * take that fails with `unavailable` is printed as { l, e } (the store answered nothing).
 * Exits non-zero on any other error.
 */
const { openDibs } = await import(process.argv[2] === 'dist' ? '../../dist/index.js' : '../../src/index.js');
const config = JSON.parse(process.argv[3]);
const dibs = await openDibs(config.store);
const lines = [];
try {
  // warm up first (a connection's first request can take seconds: Firestore's client, a TLS handshake)
  for (const l of config.limits) await dibs.limits.get(l);
  // every worker starts when the parent says go (all of them opened), so the demand overlaps from the first take
  process.stdout.write('ready\n');
  await new Promise((resolve) => process.stdin.once('data', () => resolve()));
  process.stdin.pause();
  const end = Date.now() + config.durationMs;
  await Promise.all(
    Array.from({ length: config.concurrency }, async (_, loop) => {
      for (let i = loop; Date.now() < end; i++) {
        const l = config.limits[i % config.limits.length];
        try {
          const d = await dibs.limits.take(l, 1, { key: config.key });
          lines.push(JSON.stringify({ l, a: d.allowed ? 1 : 0, t: d.at }));
        } catch (error) {
          if (error?.code !== 'unavailable') throw error;
          lines.push(JSON.stringify({ l, e: 'unavailable' }));
        }
      }
    }),
  );
} finally {
  await dibs.close();
}
process.stdout.write(`${lines.join('\n')}\n`);
