import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { sqliteNodeProblem } from '../../src/backends/sqlite/node-support.js';

describe('the SQLite store on Node versions its driver cannot run on', () => {
  it('refuses Node 24 and later with better-sqlite3 12, and says what to do', () => {
    for (const node of ['24.0.0', '24.21.0', 'v26.10.0']) {
      const problem = sqliteNodeProblem(node, '12.11.1');
      assert.ok(problem, `Node ${node} with better-sqlite3 12 must be refused`);
      assert.match(problem, /Node 20 or 22/);
      assert.match(problem, /PostgreSQL, Redis or Firestore/);
    }
  });

  it('runs on Node 20 and 22, and on any Node with better-sqlite3 13', () => {
    for (const node of ['20.19.0', '20.20.2', '22.12.0', '23.11.0'])
      assert.equal(sqliteNodeProblem(node, '12.11.1'), null);
    assert.equal(sqliteNodeProblem('24.21.0', '13.2.0'), null);
  });

  it('this machine’s Node opens the store', async () => {
    assert.equal(sqliteNodeProblem(), null, `this suite runs on Node ${process.versions.node}`);
    const dibs = await openDibs('sqlite::memory:');
    await dibs.close();
  });
});
