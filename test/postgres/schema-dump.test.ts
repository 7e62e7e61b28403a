/**
 * The PostgreSQL schema as a fresh open leaves it, against the committed dump
 * (test/postgres/schema.sql: pg_dump --schema-only, normalised), so every schema change shows up
 * as a reviewed diff of that file. After a deliberate change, regenerate it:
 *   DIBS_UPDATE_SCHEMA=1 node scripts/test.mjs --no-typecheck test/postgres/schema-dump.test.ts
 * Also: server-side functions are (re)applied from functions/*.sql when the ledger's hash differs,
 * and never put back by a build with fewer migrations.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { loadMigrations } from '../../src/backends/shared/sql-files.js';
import { openDibs } from '../../src/index.js';
import { adminQuery, requirePostgres, tempPgStore, TEST_PG } from '../support/postgres.js';

const skip = await requirePostgres();
const DUMP = new URL('./schema.sql', import.meta.url);

/** pg_dump of one schema without what varies between runs: its name, owners, settings, comments. */
function dumpSchema(schema: string): string {
  const raw = execFileSync('pg_dump', ['--schema-only', '--no-owner', '--no-privileges', '--schema', schema, TEST_PG], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  return `${raw
    .split('\n')
    // \restrict / \unrestrict carry a random key per run (pg_dump 15.14+).
    .filter(
      (line) =>
        !line.startsWith('--') &&
        !/^\\(un)?restrict /.test(line) &&
        !/^SET \w+ = /.test(line) &&
        !line.startsWith('SELECT pg_catalog.set_config('),
    )
    .join('\n')
    .replaceAll(`"${schema}"`, 'dibs')
    .replaceAll(schema, 'dibs')
    .replace(/\n{3,}/g, '\n\n')
    .trim()}\n`;
}

const functionDef = async (schema: string, name: string) =>
  (
    await adminQuery<{ d: string }>(
      'SELECT pg_get_functiondef(p.oid) AS d FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname = $2',
      [schema, name],
    )
  )[0]!.d;

/**
 * Functions a migration itself needs while it runs (013's backfill and trigger, 028's trigger), created there at
 * that version; every other function is only in functions/*.sql. A migration that defined one
 * would be overwritten by the file on a fresh schema but not on an existing one.
 */
const CREATED_BY_MIGRATIONS = new Set([
  '009_code_lifecycle:code_open',
  '013_parked_codes:code_parked_until',
  '013_parked_codes:codes_park',
  '028_room_counters:tickets_count',
]);

it('migrations define no functions (their text lives in functions/*.sql)', () => {
  const found = loadMigrations(new URL('../../src/backends/postgres/migrations/', import.meta.url)).flatMap((m) =>
    [...m.sql.matchAll(/^\s*CREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+(?:\w+\.)?(\w+)/gim)].map(
      (match) => `${m.name}:${match[1]!.toLowerCase()}`,
    ),
  );
  const stray = found.filter((f) => !CREATED_BY_MIGRATIONS.has(f));
  assert.deepEqual(
    stray,
    [],
    'move these functions to src/backends/postgres/functions/<name>.sql (one file each, CREATE OR REPLACE)',
  );
});

describe('postgres schema', { skip }, () => {
  const temp = tempPgStore();
  after(() => temp.drop());

  it('a freshly migrated schema matches the committed dump', async () => {
    await (await openDibs(temp.store)).close();
    const dump = dumpSchema(temp.schema);
    if (process.env.DIBS_UPDATE_SCHEMA === '1') writeFileSync(DUMP, dump);
    const committed = readFileSync(DUMP, 'utf8');
    if (dump === committed) return;
    const a = committed.split('\n');
    const b = dump.split('\n');
    const at = a.findIndex((line, i) => line !== b[i]);
    assert.fail(
      `the schema differs from test/postgres/schema.sql at line ${at + 1}:\n  committed: ${a[at]}\n  migrated:  ${b[at]}\n(a deliberate change: regenerate with DIBS_UPDATE_SCHEMA=1, see the header of this test)`,
    );
  });

  it('a function whose file changed is applied again on open; one a newer build applied is left alone', async () => {
    const original = await functionDef(temp.schema, 'iso_utc');
    const drifted = `CREATE OR REPLACE FUNCTION "${temp.schema}".iso_utc(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT 'drifted' $$`;
    // This build's file differs from what the ledger recorded: applied again.
    await adminQuery(drifted);
    await adminQuery(`UPDATE "${temp.schema}".function_versions SET hash = 'stale' WHERE name = 'iso_utc'`);
    await (await openDibs(temp.store)).close();
    assert.equal(await functionDef(temp.schema, 'iso_utc'), original);
    const [row] = await adminQuery<{ hash: string }>(
      `SELECT hash FROM "${temp.schema}".function_versions WHERE name = 'iso_utc'`,
    );
    assert.notEqual(row!.hash, 'stale');
    // A build with more migrations wrote it: this build does not put its own text back.
    await adminQuery(drifted);
    await adminQuery(
      `UPDATE "${temp.schema}".function_versions SET hash = 'newer', level = level + 1000 WHERE name = 'iso_utc'`,
    );
    await (await openDibs(temp.store)).close();
    assert.match(await functionDef(temp.schema, 'iso_utc'), /drifted/);
  });
});
