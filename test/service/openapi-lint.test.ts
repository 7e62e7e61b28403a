/**
 * A third party's reading of the API document: Redocly's `recommended` ruleset (the dev dependency
 * @redocly/cli, run offline: telemetry and update checks off) must report no error and no warning.
 * Our own contract test validates the document against the OpenAPI 3.1 schema; this one catches
 * what a schema cannot see (tags without descriptions, `required` names a schema does not define,
 * no license) and what client generators and documentation tools warn about.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openTestService, type TestService } from '../support/service.js';

const require = createRequire(import.meta.url);
const REDOCLY = join(dirname(require.resolve('@redocly/cli/package.json')), 'bin', 'cli.js');

interface LintReport {
  totals: { errors: number; warnings: number };
  problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[];
}

describe('OpenAPI document under Redocly lint (recommended ruleset)', () => {
  let svc: TestService;
  let dir: string;
  before(async () => {
    svc = await openTestService();
    dir = mkdtempSync(join(tmpdir(), 'dibs-redocly-'));
  });
  after(async () => {
    await svc.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports no errors and no warnings', async () => {
    const res = await svc.app.inject({ method: 'GET', url: '/openapi.json' });
    assert.equal(res.statusCode, 200);
    const file = join(dir, 'openapi.json');
    writeFileSync(file, res.body);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      REDOCLY_TELEMETRY: 'off',
      REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
      NO_COLOR: '1',
    };
    delete env.NODE_OPTIONS; // no tsx loader in the linter's process
    const run = spawnSync(process.execPath, [REDOCLY, 'lint', file, '--extends', 'recommended', '--format', 'json'], {
      cwd: dir,
      env,
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.ok(
      run.stdout.trim().startsWith('{'),
      `redocly printed no JSON report (exit ${run.status}): ${run.stderr.slice(-2000)}`,
    );
    const report = JSON.parse(run.stdout) as LintReport;
    const problems = report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);
    assert.deepEqual(
      problems,
      [],
      `Redocly found ${report.totals.errors} error(s) and ${report.totals.warnings} warning(s)`,
    );
    assert.equal(run.status, 0, run.stderr);
  });
});
