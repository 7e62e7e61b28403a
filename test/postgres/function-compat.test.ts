/**
 * Server-side functions are shared by every build that runs against one schema: during a rolling
 * deploy the newest build's text wins (functions.ts never puts older text back), so instances of
 * the older build call the newer function. A change to a function must therefore keep serving
 * their calls: the same parameters (new ones only with a DEFAULT), the same result columns in the
 * same order with the same types (new ones only appended; the older build's statements name the
 * columns they read, and stale-plans.ts prepares a statement again when the row grows). This test
 * holds the functions of a fresh schema against the signatures recorded in
 * function-signatures.json. A compatible change is recorded with
 *   DIBS_UPDATE_SCHEMA=1 node scripts/test.mjs --no-typecheck test/postgres/function-compat.test.ts
 * An incompatible one should be a new function (name_v2) beside the old, which stays until no
 * build calls it; to record a break anyway, add DIBS_ACCEPT_INCOMPATIBLE_FUNCTIONS=1 and say why in
 * the commit.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { adminQuery, requirePostgres, tempPgStore } from '../support/postgres.js';

const skip = await requirePostgres();
const RECORD = new URL('./function-signatures.json', import.meta.url);

interface Signature {
  /** pg_get_function_arguments: names, types and defaults, in order. */
  args: string;
  /** pg_get_function_result: `TABLE(col type, …)`, a type, or `SETOF …`. */
  result: string;
}

/** Top-level comma split (types like numeric(10,2) keep their commas). */
function splitTop(list: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of list) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(current.trim());
      current = '';
    } else current += ch;
  }
  if (current.trim()) parts.push(current.trim());
  return parts;
}

const columns = (result: string): string[] | null =>
  /^TABLE\((.*)\)$/s.test(result) ? splitTop(result.slice('TABLE('.length, -1)) : null;

/** What an older build calling `was` would meet in `now`; empty when it still serves it. */
export function incompatibilities(name: string, was: Signature, now: Signature | undefined): string[] {
  if (!now) return [`${name}: removed, but older builds still call it`];
  const problems: string[] = [];
  const oldArgs = splitTop(was.args);
  const newArgs = splitTop(now.args);
  if (oldArgs.some((a, i) => newArgs[i] !== a))
    problems.push(`${name}: parameters changed from (${was.args}) to (${now.args})`);
  else if (newArgs.slice(oldArgs.length).some((a) => !/ DEFAULT /i.test(a)))
    problems.push(`${name}: new parameters without a DEFAULT (${newArgs.slice(oldArgs.length).join(', ')})`);
  const oldCols = columns(was.result);
  const newCols = columns(now.result);
  if (oldCols && newCols) {
    if (oldCols.some((c, i) => newCols[i] !== c))
      problems.push(`${name}: result columns changed from ${was.result} to ${now.result} (append new ones only)`);
  } else if (was.result !== now.result) problems.push(`${name}: result changed from ${was.result} to ${now.result}`);
  return problems;
}

describe('postgres functions stay callable by the build before', { skip }, () => {
  const temp = tempPgStore();
  after(() => temp.drop());

  it('every recorded function keeps its parameters and result columns (new ones only appended)', async () => {
    const dibs = await openDibs(temp.store);
    await dibs.close();
    const rows = await adminQuery<{ name: string; args: string; result: string }>(
      `SELECT p.proname AS name, pg_get_function_arguments(p.oid) AS args, pg_get_function_result(p.oid) AS result
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = $1 AND p.prokind = 'f' ORDER BY p.proname, args`,
      [temp.schema],
    );
    const now: Record<string, Signature> = {};
    for (const r of rows) {
      assert.equal(now[r.name], undefined, `${r.name} is overloaded: a call from an older build may resolve to either`);
      // types of dibs' own tables carry the schema's name, which differs per run
      const plain = (text: string) => text.replaceAll(`"${temp.schema}"`, 'dibs').replaceAll(temp.schema, 'dibs');
      now[r.name] = { args: plain(r.args), result: plain(r.result) };
    }
    const recorded: Record<string, Signature> = existsSync(RECORD) ? JSON.parse(readFileSync(RECORD, 'utf8')) : {};
    const problems = Object.entries(recorded).flatMap(([name, was]) => incompatibilities(name, was, now[name]));
    if (
      process.env.DIBS_UPDATE_SCHEMA === '1' &&
      (problems.length === 0 || process.env.DIBS_ACCEPT_INCOMPATIBLE_FUNCTIONS === '1')
    ) {
      writeFileSync(RECORD, `${JSON.stringify(now, null, 2)}\n`);
      return;
    }
    assert.deepEqual(
      problems,
      [],
      "older builds call these functions during a rolling deploy (see this file's header)",
    );
    const unrecorded = Object.keys(now).filter((name) => !(name in recorded));
    assert.deepEqual(unrecorded, [], 'new functions: record them with DIBS_UPDATE_SCHEMA=1');
  });
});

describe('the compatibility rule', () => {
  const was = { args: 'p_sale text, p_qty integer', result: 'TABLE(outcome text, result_id text)' };
  it('accepts appended result columns and defaulted parameters', () => {
    assert.deepEqual(
      incompatibilities('f', was, {
        args: 'p_sale text, p_qty integer, p_note text DEFAULT NULL::text',
        result: 'TABLE(outcome text, result_id text, ctx jsonb)',
      }),
      [],
    );
  });
  it('refuses a removed, renamed or retyped column, a changed or undefaulted parameter, a removed function', () => {
    const cases: Signature[] = [
      { args: was.args, result: 'TABLE(outcome text, ctx jsonb)' },
      { args: was.args, result: 'TABLE(outcome text, result_id bigint)' },
      { args: 'p_sale text, p_qty bigint', result: was.result },
      { args: 'p_sale text, p_qty integer, p_note text', result: was.result },
    ];
    for (const c of cases) assert.equal(incompatibilities('f', was, c).length, 1, JSON.stringify(c));
    assert.deepEqual(incompatibilities('f', was, undefined), ['f: removed, but older builds still call it']);
  });
});
