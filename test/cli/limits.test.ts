/** `dibs limits …` run as a real process against a temp SQLite store. */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { runCli } from '../support/cli.js';
import { tempSqliteStore } from '../support/sqlite.js';

describe('dibs limits (CLI)', () => {
  const temp = tempSqliteStore();
  const env = { DIBS_STORE: temp.store };
  after(() => temp.cleanup());

  it('help shows examples; create, take until denied (exit 3), list', async () => {
    const help = await runCli(['limits', 'create', '--help']);
    assert.match(help.stdout, /Examples:/);
    assert.match(help.stdout, /--algorithm token-bucket --limit 30 --period 1000 --burst 5/);
    const created = await runCli(
      ['limits', 'create', 'sms', '--algorithm', 'quota', '--limit', '2', '--period', '86400000'],
      { env },
    );
    assert.equal(created.code, 0, created.stderr);
    assert.match(created.stdout, /2 per 86400000 ms/);
    assert.match(
      (await runCli(['limits', 'take', 'sms', '--count', '2', '--key', 'u'], { env })).stdout,
      /allowed \(0 left\)/,
    );
    const peeked = await runCli(['limits', 'peek', 'sms', '--key', 'u'], { env });
    assert.equal(peeked.code, 3, 'a peek at an empty allowance exits 3');
    assert.match(peeked.stdout, /denied: retry in \d+ ms .*\(nothing taken\)/);
    assert.match((await runCli(['limits', 'peek', 'sms', '--key', 'v'], { env })).stdout, /^2 left \(nothing taken\)/);
    assert.match((await runCli(['limits', 'peek', '--help'])).stdout, /Examples:/);
    const denied = await runCli(['limits', 'take', 'sms', '--key', 'u'], { env });
    assert.equal(denied.code, 3);
    assert.match(denied.stdout, /denied: retry in \d+ ms/);
    const bad = await runCli(['limits', 'take', 'sms', '--count', '3'], { env });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /error \[invalid_input\]/);
    assert.match((await runCli(['limits', 'list'], { env })).stdout, /sms\tquota\t2\/86400000 ms/);
  });
});
