/** One process of the SQLite multi-process benchmark: `raw|dibs <file|store> <claims> <id>`. */
import Database from 'better-sqlite3';
import { openDibs } from '../src/index.js';
import { barrier, timeOps } from './lib/measure.js';
import { RAW_CLAIM } from './sqlite.js';

const [mode, target, count, id] = process.argv.slice(2) as [string, string, string, string];
const claims = Number(count);
if (mode === 'raw') {
  // A generous busy timeout: on a loaded machine a process can wait seconds for the write lock,
  // and a baseline that gives up measures nothing.
  const db = new Database(target, { timeout: 60_000 });
  db.pragma('synchronous = FULL');
  const claim = db.prepare(RAW_CLAIM);
  await barrier();
  const run = await timeOps(claims, 1, (i) => claim.get(`${id}-${i}`));
  db.close();
  process.stdout.write(JSON.stringify(run));
} else {
  const dibs = await openDibs(target);
  await barrier();
  const run = await timeOps(claims, 8, (i) => dibs.pools.claim('bench', `${id}-${i}`));
  await dibs.close();
  process.stdout.write(JSON.stringify(run));
}
