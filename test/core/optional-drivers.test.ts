/**
 * Store drivers are optional peer dependencies: with one missing, the library still loads, other
 * stores work, and a URL that needs it fails with a typed error naming the package to install.
 * The packages are hidden by a resolution hook (test/support/hide-package.mjs) in a child process.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { it } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

function run(hide: string, script: string): { code: string; message: string; details: unknown; sqliteOk: boolean } {
  const out = execFileSync(
    process.execPath,
    ['--import', 'tsx', '--import', './test/support/hide-package.mjs', '--input-type=module', '-e', script],
    {
      cwd: root,
      env: { ...process.env, DIBS_HIDE_PACKAGES: hide },
      encoding: 'utf8',
      timeout: 60_000,
    },
  );
  return JSON.parse(out.trim().split('\n').pop()!);
}

const probe = (store: string) => `
import { openDibs, isDibsError } from './src/index.ts';
const lite = await openDibs('sqlite::memory:');
await lite.pools.create({ name: 'p' });
await lite.close();
try { const d = await openDibs(${JSON.stringify(store)}); await d.close(); console.log(JSON.stringify({ code: 'opened', message: '', sqliteOk: true })); }
catch (e) { console.log(JSON.stringify({ code: isDibsError(e) ? e.code : 'untyped:' + e.code, message: e.message, details: e.details, sqliteOk: true })); }`;

it('postgres:// without pg: unsupported, naming the package; SQLite unaffected', () => {
  const r = run('pg,pg-copy-streams', probe('postgres://root@127.0.0.1:5432/test?schema=never_created'));
  assert.equal(r.code, 'unsupported', r.message);
  assert.match(r.message, /npm install pg pg-copy-streams/);
  assert.deepEqual((r.details as { package: string }).package, 'pg');
  assert.ok(r.sqliteOk);
});

it('redis:// without ioredis: unsupported, naming the package', () => {
  const r = run('ioredis', probe('redis://127.0.0.1:6379/0'));
  assert.equal(r.code, 'unsupported', r.message);
  assert.match(r.message, /'ioredis'.*npm install ioredis/);
});

it('firestore:// without @google-cloud/firestore: unsupported, naming the package', () => {
  const r = run('@google-cloud/firestore', probe('firestore://demo-project'));
  assert.equal(r.code, 'unsupported', r.message);
  assert.match(r.message, /@google-cloud\/firestore/);
});

it('tracing without @opentelemetry/api, event streams without ioredis: unsupported, naming the package; untraced use never loads it', () => {
  const r = run(
    '@opentelemetry/api,ioredis',
    `
import { openDibs, isDibsError } from './src/index.ts';
import { RedisStreamDestination } from './src/notify/redis-stream.ts';
const plain = await openDibs('sqlite::memory:');
await plain.pools.create({ name: 'p' });
await plain.close();
const failure = (e) => ({ code: isDibsError(e) ? e.code : 'untyped:' + e.code, message: e.message, details: e.details });
let stream;
try { await RedisStreamDestination.open('redis://127.0.0.1:6379/0'); stream = { code: 'opened' }; } catch (e) { stream = failure(e); }
try { const d = await openDibs('sqlite::memory:', { tracing: true }); await d.close(); console.log(JSON.stringify({ code: 'opened', message: '', sqliteOk: true, stream })); }
catch (e) { console.log(JSON.stringify({ ...failure(e), sqliteOk: true, stream })); }`,
  ) as ReturnType<typeof run> & { stream: { code: string; message: string } };
  assert.equal(r.code, 'unsupported', r.message);
  assert.match(r.message, /npm install @opentelemetry\/api/);
  assert.ok(r.sqliteOk);
  assert.equal(r.stream.code, 'unsupported', r.stream.message);
  assert.match(r.stream.message, /'ioredis'.*npm install ioredis/);
});
