/**
 * `dibs loadtest` as a process: exit codes (0 clean, 1 violation, 2 bad input), --json, the
 * report and SVG files — and the checker failing for real on a store that double-issues.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { runLoadtest } from '../../src/loadtest/run.js';
import type { LoadtestReport } from '../../src/loadtest/types.js';
import { tempSqliteStore } from '../support/sqlite.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENTRY = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const BROKEN = fileURLToPath(new URL('./broken-store.ts', import.meta.url));

/** Runs the CLI with a time bound; returns exit code and output. */
function dibs(args: string[], timeoutMs = 60_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', ENTRY, ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('dibs loadtest (CLI)', () => {
  const temp = tempSqliteStore();
  after(() => temp.cleanup());

  it('--sale and --locks run their modes; options of another mode are bad input (exit 2)', async () => {
    const sale = await dibs([
      'loadtest',
      '--store',
      temp.store,
      '--sale',
      '--cap',
      '50',
      '--processes',
      '2',
      '--claimants',
      '120',
      '--json',
    ]);
    assert.equal(sale.code, 0, sale.stderr);
    const report = JSON.parse(sale.stdout) as LoadtestReport;
    assert.equal(report.scenario.mode, 'sale');
    assert.equal(report.numbers.codesGiven, 50);
    const locks = await dibs([
      'loadtest',
      '--store',
      temp.store,
      '--locks',
      '--keys',
      '3',
      '--processes',
      '2',
      '--claimants',
      '60',
    ]);
    assert.equal(locks.code, 0, locks.stderr);
    assert.match(locks.stdout, /OK {2}mutual exclusion held/);
    const wrong = await dibs(['loadtest', '--store', temp.store, '--keys', '3']);
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /--keys works with --locks only/);
  });

  it('a clean run exits 0, prints the report and writes <pool>.json and <pool>.svg with --out', async () => {
    const out = join(temp.dir, 'results');
    const r = await dibs([
      'loadtest',
      '--store',
      temp.store,
      '--processes',
      '2',
      '--claimants',
      '300',
      '--codes',
      '120',
      '--out',
      out,
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /OK {2}exactly-once held/);
    assert.match(
      r.stdout,
      /numbers +demand 300, supply 120 → expected 120 codes handed out; handed out 120 to 120 winners/,
    );
    const files = readdirSync(out).sort();
    assert.equal(files.length, 2);
    const report = JSON.parse(readFileSync(join(out, files[0]!), 'utf8')) as LoadtestReport;
    assert.equal(report.ok, true);
    assert.equal(files[1], `${report.pool}.svg`);
    const svg = readFileSync(join(out, files[1]!), 'utf8');
    assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.match(svg, /latency \(ms/);
    assert.match(svg, /claimed \d+/);
    assert.doesNotMatch(svg, /NaN|undefined|Infinity/);
  });

  it('--json prints only the report object', async () => {
    const svg = join(temp.dir, 'chart', 'run.svg');
    const r = await dibs([
      'loadtest',
      '--store',
      temp.store,
      '--processes',
      '2',
      '--claimants',
      '100',
      '--codes',
      '100',
      '--arrival',
      'uniform',
      '--duration',
      '0.5',
      '--json',
      '--svg',
      svg,
    ]);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as LoadtestReport;
    assert.equal(report.ok, true);
    assert.equal(report.numbers.winners, 100);
    assert.equal(report.scenario.arrival, 'uniform');
    assert.ok(existsSync(svg));
  });

  it('a store that double-issues makes it report I1 and exit 1', async () => {
    const r = await dibs([
      'loadtest',
      '--store',
      temp.store,
      '--store-module',
      BROKEN,
      '--processes',
      '2',
      '--claimants',
      '300',
      '--codes',
      '200',
      '--json',
    ]);
    assert.equal(r.code, 1, r.stderr);
    const report = JSON.parse(r.stdout) as LoadtestReport;
    assert.equal(report.ok, false);
    const checks = new Set(report.violations.map((v) => v.check));
    assert.ok(checks.has('I1'), JSON.stringify(report.violations.slice(0, 3)));
    assert.ok(report.violations.some((v) => /I1: code \S+ was acknowledged to \S+ and to \S+/.test(v.message)));
    // The fake answers took no code: the store still has free codes while demand exceeded supply.
    assert.ok(checks.has('numbers') || checks.has('I5'));
  });

  it('the text report lists the violations', async () => {
    const r = await dibs([
      'loadtest',
      '--store',
      temp.store,
      '--store-module',
      BROKEN,
      '--processes',
      '2',
      '--claimants',
      '100',
      '--codes',
      '100',
    ]);
    assert.equal(r.code, 1);
    assert.match(r.stdout, /FAILED {2}\d+ violations:/);
    assert.match(r.stdout, /\[I1\] I1: code/);
  });

  for (const [why, args] of [
    ['a non-number', ['--claimants', 'lots']],
    ['zero processes', ['--processes', '0']],
    ['an unknown arrival pattern', ['--arrival', 'tsunami']],
    ['a ratio above 1', ['--repeat-ratio', '1.5']],
    ['both --store and --url', ['--url', 'http://127.0.0.1:9']],
    ['--codes with --pool', ['--pool', 'p', '--codes', '10']],
    ['an unknown option', ['--procs', '2']],
    ['a bad pool name', ['--pool', '../etc']],
  ] as const) {
    it(`bad input exits 2: ${why}`, async () => {
      const r = await dibs(['loadtest', '--store', temp.store, ...args]);
      assert.equal(r.code, 2, `${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /error/);
    });
  }

  it('takes --store and --json as the program global options too (dibs --store … --json loadtest)', async () => {
    const r = await dibs([
      '--store',
      temp.store,
      '--json',
      'loadtest',
      '--processes',
      '1',
      '--claimants',
      '20',
      '--codes',
      '10',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as LoadtestReport;
    assert.equal(report.target.address, temp.store);
    assert.equal(report.numbers.codesGiven, 10);
  });

  it('--help explains the options and shows examples', async () => {
    const r = await dibs(['loadtest', '--help']);
    assert.equal(r.code, 0);
    for (const option of [
      '--store',
      '--url',
      '--key',
      '--processes',
      '--claimants',
      '--codes',
      '--pool',
      '--arrival',
      '--duration',
      '--repeat-ratio',
      '--limit',
      '--concurrency',
      '--json',
      '--svg',
      '--out',
    ]) {
      assert.ok(r.stdout.includes(option), option);
    }
    assert.match(r.stdout, /Examples:/);
    assert.match(r.stdout, /Exit codes/);
    assert.doesNotMatch(r.stdout, /store-module/);
  });
});

describe('runLoadtest with a store that double-issues', () => {
  const temp = tempSqliteStore();
  after(() => temp.cleanup());

  it('returns ok: false with I1 violations and the evidence', async () => {
    const report = await runLoadtest({
      target: { kind: 'store', store: temp.store, storeModule: BROKEN },
      processes: 2,
      claimants: 500,
      codes: 200,
    });
    assert.equal(report.ok, false);
    const i1 = report.violations.filter((v) => v.check === 'I1');
    assert.ok(i1.length > 0);
    // Capped, with the remainder counted, so a broken store does not flood the report.
    assert.ok(i1.length <= 21);
    // The store's own audit cannot see it (the fake answers never reached the store): the
    // answers-versus-state comparison is what catches it.
    assert.deepEqual(report.audit, []);
  });
});

describe('runLoadtest with a store that loses acknowledgements or promises phantom orders', () => {
  const temp = tempSqliteStore();
  after(() => {
    delete process.env.DIBS_BROKEN;
    return temp.cleanup();
  });

  it("lose-ack: acknowledged codes released behind the claimant's back are reported as I5", async () => {
    process.env.DIBS_BROKEN = 'lose-ack';
    const report = await runLoadtest({
      target: { kind: 'store', store: temp.store, storeModule: BROKEN },
      processes: 2,
      claimants: 300,
      codes: 400,
    });
    assert.equal(report.ok, false);
    assert.ok(
      report.violations.some((v) => v.check === 'I5'),
      JSON.stringify(report.violations.slice(0, 3)),
    );
  });

  it('phantom-order: buys acknowledged beyond the cap are reported', async () => {
    process.env.DIBS_BROKEN = 'phantom-order';
    const report = await runLoadtest({
      target: { kind: 'store', store: temp.store, storeModule: BROKEN },
      mode: 'sale',
      processes: 2,
      claimants: 300,
      cap: 50,
    });
    assert.equal(report.ok, false);
    assert.ok(
      report.violations.some((v) => v.check === 'I5' || v.check === 'I3'),
      JSON.stringify(report.violations.slice(0, 3)),
    );
  });

  it('oversell: a store that really sells beyond the cap (quietly lifting it) is reported as I3', async () => {
    process.env.DIBS_BROKEN = 'oversell';
    const report = await runLoadtest({
      target: { kind: 'store', store: temp.store, storeModule: BROKEN },
      mode: 'sale',
      processes: 2,
      claimants: 300,
      cap: 50,
    });
    assert.equal(report.ok, false);
    assert.ok(
      report.violations.some((v) => v.check === 'I3'),
      JSON.stringify(report.violations.slice(0, 3)),
    );
    // The store's own state is consistent with its lifted cap: only the plan-versus-store check sees it.
    assert.deepEqual(report.audit, []);
  });
});
