/**
 * The built JavaScript in dist/ runs a load test with plain `node` — no tsx anywhere: the
 * coordinator finds dist/loadtest/worker.js beside itself and spawns it without `--import tsx`.
 * (`npm test` builds dist/ first; run `node scripts/build.mjs` before running this file alone.)
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempSqliteStore } from '../support/sqlite.js';

const DIST = new URL('../../dist/loadtest/index.js', import.meta.url);
const SPAWN = new URL('../../dist/loadtest/spawn.js', import.meta.url);

describe('loadtest from dist/ (plain node, no tsx)', () => {
  const temp = tempSqliteStore();
  after(() => temp.cleanup());

  it('runs workers from dist and verifies a clean run', (t) => {
    if (!existsSync(fileURLToPath(DIST))) {
      const message = 'dist/loadtest is not built: run `node scripts/build.mjs` (npm test does it first)';
      if (process.env.CI === 'true') assert.fail(message);
      t.skip(message);
      return;
    }
    const script = `
      import { runLoadtest } from ${JSON.stringify(DIST.href)};
      import { workerCommand } from ${JSON.stringify(SPAWN.href)};
      const command = workerCommand({ kind: 'store', store: 'sqlite::memory:' });
      const report = await runLoadtest({ target: { kind: 'store', store: ${JSON.stringify(temp.store)} }, processes: 2, claimants: 200, codes: 80 });
      console.log(JSON.stringify({ args: command.args, ok: report.ok, violations: report.violations, winners: report.numbers.winners }));
    `;
    // A clean environment: no NODE_OPTIONS carrying a tsx loader into the child.
    const env = { ...process.env };
    delete env.NODE_OPTIONS;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      cwd: temp.dir,
      env,
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as {
      args: string[];
      ok: boolean;
      violations: unknown[];
      winners: number;
    };
    assert.ok(!out.args.includes('--import'), `worker spawned with ${out.args.join(' ')}`);
    assert.ok(out.args[0]!.endsWith('worker.js'));
    assert.deepEqual(out.violations, []);
    assert.equal(out.ok, true);
    assert.equal(out.winners, 80);
  });
});
