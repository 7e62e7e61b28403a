// One short-lived "serverless instance" of the cold-start storm (bench/cold-start.ts): loads dibs
// from dist/ (as a deployed function would), opens it, makes 5 claims, closes, and prints one JSON
// line: import, open and claim times, errors.
const [mode, target, pool, id, apiKey] = process.argv.slice(2);
const t0 = performance.now();
const mod = mode === 'client' ? await import('../dist/client/index.js') : await import('../dist/index.js');
const tImport = performance.now();
const dibs = mode === 'client' ? mod.createClient({ baseUrl: target, apiKey }) : await mod.openDibs(target);
const tOpen = performance.now();
const claims = [];
let errors = 0;
let firstClaimMs = null;
let startToFirstMs = null;
for (let i = 0; i < 5; i++) {
  const t = performance.now();
  try {
    await dibs.pools.claim(pool, `${id}-${i}`);
    claims.push(performance.now() - t);
    if (firstClaimMs === null) {
      firstClaimMs = performance.now() - tImport;
      startToFirstMs = performance.now(); // since the process started (Node's time origin)
    }
  } catch (error) {
    errors++;
    process.stderr.write(`claim failed: ${error?.code ?? ''} ${error?.message ?? error}\n`);
  }
}
if (mode !== 'client') await dibs.close();
console.log(
  JSON.stringify({ importMs: tImport - t0, openMs: tOpen - tImport, firstClaimMs, startToFirstMs, claims, errors }),
);
