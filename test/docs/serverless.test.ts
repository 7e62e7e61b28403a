/**
 * docs/serverless.md's TypeScript examples run as written, in an app directory where `dibs`
 * resolves as an installed package would (its `exports`, here pointing at the sources):
 * - the Cloudflare Worker (`export default { fetch }`) and the two client fragments (claim with
 *   its sold-out answer; runExclusive with the lease's fence) against the HTTP service on a
 *   loopback port over SQLite — a fragment runs as the body of a function given the names it
 *   uses but does not define (`env`, `userId`, `dibs`, `id`, `writeInvoice`);
 * - the Lambda handler (module-scope openDibs) through a test-owned PgBouncer in transaction
 *   mode, with `DIBS_STORE` as the page says: a claim, its replay by the same order id, a second
 *   claim, and sold out.
 * Each runs in a child process (node + tsx), bounded in time. If the page loses one of these
 * examples the test fails: the examples are what it checks.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { openDibs, type Dibs } from '../../src/index.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { serveOverHttp, type ServedDibs } from '../support/client.js';
import { requirePgBouncer, startPgBouncer, type PgBouncer } from '../support/pgbouncer.js';
import { requirePostgres, tempPgStore } from '../support/postgres.js';
import { codeBlocks } from './markdown.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSX = import.meta.resolve('tsx');
const blocks = codeBlocks(readFileSync(join(ROOT, 'docs/serverless.md'), 'utf8')).filter((b) => b.lang === 'ts');
const find = (what: string, test: (body: string) => boolean) => {
  const block = blocks.find((b) => test(b.body));
  assert.ok(block, `docs/serverless.md has no ${what} example any more`);
  return block.body;
};
const WORKER = find('Cloudflare Worker', (b) => /export default\s*\{/.test(b) && b.includes("from 'dibs/client'"));
const LAMBDA = find('Lambda handler', (b) => b.includes('export const handler') && b.includes("from 'dibs'"));
const CLAIM = find(
  'client claim',
  (b) => !/^export /m.test(b) && b.includes('createClient(') && b.includes('.pools.claim('),
);
const LOCK = find('runExclusive', (b) => !/^export /m.test(b) && b.includes('.locks.runExclusive('));

/** A fragment as a module: its imports on top, its body inside `run(scope)` given the names it uses but does not define. */
function fragmentModule(body: string): string {
  const lines = body.split('\n');
  const imports = lines.filter((l) => /^import /.test(l));
  const rest = lines.filter((l) => !/^import /.test(l)).join('\n');
  const given = ['env', 'userId', 'dibs', 'id', 'writeInvoice'].filter(
    (name) =>
      new RegExp(`\\b${name}\\b`).test(rest) &&
      !new RegExp(`\\b(const|let|var)\\s+(\\{[^}]*\\b${name}\\b[^}]*\\}|${name})\\s*=`).test(rest),
  );
  return `${imports.join('\n')}\nexport async function run(scope: any) {\n  const { ${given.join(', ')} } = scope;\n  {\n${rest}\n  }\n}\n`;
}

/** An app directory where `import … from 'dibs'` / `'dibs/client'` resolve through a package's exports. */
function appDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-serverless-docs-'));
  const pkg = join(dir, 'node_modules', 'dibs');
  mkdirSync(pkg, { recursive: true });
  symlinkSync(join(ROOT, 'src'), join(pkg, 'src'));
  writeFileSync(
    join(pkg, 'package.json'),
    JSON.stringify({
      name: 'dibs',
      type: 'module',
      exports: { '.': './src/index.ts', './client': './src/client/index.ts' },
    }),
  );
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'app', type: 'module', private: true }));
  return dir;
}

/** Runs `harness` (TypeScript) in `dir`; its last stdout line is JSON. */
// biome-ignore lint/suspicious/noExplicitAny: each harness prints its own JSON shape, read by the test that wrote it
function runHarness(dir: string, harness: string, env: Record<string, string>): Promise<any> {
  writeFileSync(join(dir, 'harness.ts'), harness);
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', TSX, 'harness.ts'],
      { cwd: dir, env: { ...process.env, ...env }, timeout: 120_000, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error) return reject(new Error(`${error.message}\n${stderr}`));
        try {
          resolve(JSON.parse(stdout.trim().split('\n').pop()!));
        } catch {
          reject(new Error(`no JSON from the harness: ${stdout}\n${stderr}`));
        }
      },
    );
  });
}

describe('docs/serverless.md examples: client and Worker against the service', () => {
  let dibs: Dibs;
  let served: ServedDibs;
  let dir: string;
  let key: string;

  before(async () => {
    dir = appDir();
    dibs = await openDibs('sqlite::memory:');
    // Three codes: the Worker's and two fragment claims take them, the next one is sold out.
    await dibs.pools.create({ name: 'spring', perClaimantLimit: 1 });
    await dibs.pools.importCodes('spring', ['S-1', 'S-2', 'S-3']);
    served = await serveOverHttp(dibs);
    key = (
      await createApiKey(dibs.backend.service, {
        name: 'function',
        scopes: ['pools:claim', 'locks:write', 'locks:read'],
      })
    ).key;
  });
  after(async () => {
    await served?.close();
    await dibs?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the Worker, the claim fragment (claimed, then sold out) and runExclusive run as written', async () => {
    writeFileSync(join(dir, 'worker.ts'), WORKER);
    writeFileSync(join(dir, 'claim.ts'), fragmentModule(CLAIM));
    writeFileSync(join(dir, 'lock.ts'), fragmentModule(LOCK));
    const result = await runHarness(
      dir,
      `
import worker from './worker.ts';
import { run as claim } from './claim.ts';
import { run as lock } from './lock.ts';
import { createClient } from 'dibs/client';
const env = { DIBS_URL: process.env.DIBS_URL!, DIBS_KEY: process.env.DIBS_KEY! };
const response = await worker.fetch(new Request('http://worker.local/', { method: 'POST', body: JSON.stringify({ user: 'w1' }) }), env);
const fromWorker = { status: response.status, body: await response.json() };
const claimed = [await claim({ env, userId: 'f1' }), await claim({ env, userId: 'f2' })];
const soldOut = await claim({ env, userId: 'f3' });
const fences: unknown[] = [];
await lock({ dibs: createClient({ baseUrl: env.DIBS_URL, apiKey: env.DIBS_KEY }), id: 'inv-7', writeInvoice: async ({ fence, signal }: { fence: unknown; signal: AbortSignal }) => { fences.push(fence, signal.aborted); } });
console.log(JSON.stringify({ fromWorker, claimed: claimed.map((r) => r === undefined ? 'undefined' : 'answered'), soldOut: soldOut instanceof Response ? { status: soldOut.status, body: await soldOut.text() } : String(soldOut), fences }));
`,
      { DIBS_URL: served.baseUrl, DIBS_KEY: key },
    );
    assert.equal(result.fromWorker.status, 200, JSON.stringify(result));
    assert.match(result.fromWorker.body.code, /^S-\d$/);
    assert.deepEqual(result.claimed, ['undefined', 'undefined'], 'a successful claim falls through the fragment');
    assert.deepEqual(result.soldOut, { status: 410, body: 'all gone' });
    assert.equal(result.fences.length, 2, 'runExclusive ran the work once');
    assert.ok(Number(result.fences[0]) > 0, `a fence: ${result.fences[0]}`);
    assert.equal(result.fences[1], false, 'the lease was not lost during the work');
    // The store agrees: the Worker's claimant and both fragment claimants hold the three codes.
    const holders = await Promise.all(
      ['w1', 'f1', 'f2', 'f3'].map(async (c) => (await dibs.pools.holdings('spring', c)).length),
    );
    assert.deepEqual(holders, [1, 1, 1, 0]);
    assert.deepEqual(await dibs.pools.audit('spring'), []);
  });
});

const skipPg = (await requirePostgres()) || requirePgBouncer();

describe('docs/serverless.md examples: the Lambda handler through PgBouncer', { skip: skipPg }, () => {
  let bouncer: PgBouncer;
  const temp = tempPgStore();
  let dir: string;

  before(async () => {
    dir = appDir();
    bouncer = await startPgBouncer({ poolSize: 4 });
    const seed = await openDibs(temp.store);
    await seed.pools.create({ name: 'spring', perClaimantLimit: 1 });
    await seed.pools.importCodes('spring', ['L-1', 'L-2']);
    await seed.close();
  });
  after(async () => {
    await bouncer?.stop();
    await temp.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('claims, replays the same order, claims again, then answers 410 sold out', async () => {
    writeFileSync(join(dir, 'lambda.ts'), LAMBDA);
    const result = await runHarness(
      dir,
      `
import { handler } from './lambda.ts';
const call = async (user: string, order: string) => {
  const r = await handler({ body: JSON.stringify({ user, order }) });
  return { statusCode: r.statusCode, body: r.statusCode === 200 ? JSON.parse(r.body) : r.body };
};
const answers = [await call('u1', 'o1'), await call('u1', 'o1'), await call('u2', 'o2'), await call('u3', 'o3')];
console.log(JSON.stringify(answers));
process.exit(0); // the platform freezes the instance; dibs stays open at module scope as the page says
`,
      { DIBS_STORE: bouncer.url({ schema: temp.schema, pooler: 'transaction', poolSize: '1' }) },
    );
    const [first, replay, second, soldOut] = result;
    assert.equal(first.statusCode, 200, JSON.stringify(result));
    assert.match(first.body.code, /^L-\d$/);
    assert.equal(replay.statusCode, 200);
    assert.equal(replay.body.code, first.body.code, 'the same order id answers the same code');
    assert.equal(replay.body.replayed, true);
    assert.equal(second.statusCode, 200);
    assert.notEqual(second.body.code, first.body.code);
    assert.deepEqual(soldOut, { statusCode: 410, body: 'sold out' });
    const check = await openDibs(temp.store);
    try {
      assert.equal((await check.pools.stats('spring')).claimed, 2);
      assert.deepEqual(await check.pools.audit('spring'), []);
    } finally {
      await check.close();
    }
  });
});
