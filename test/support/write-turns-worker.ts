/**
 * One process of the SQLite write-turns test: `<file> <name> <writes>`. Appends `writes` rows
 * naming itself through the group-commit write path, 8 in flight, after a start signal, so that
 * the table's row order is the order in which the processes got the write lock.
 */
import { openDatabase, write } from '../../src/backends/sqlite/database.js';

const [file, name, count] = process.argv.slice(2) as [string, string, string];
const options = { busyTimeoutMs: 30_000, synchronous: 'full' as const };
const db = await openDatabase(file, options);
const insert = db.prepare('INSERT INTO turns (proc) VALUES (?)');
process.stdout.write('ready\n');
await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
let next = 0;
const total = Number(count);
await Promise.all(
  Array.from({ length: 8 }, async () => {
    while (next < total) {
      next++;
      await write(db, options, () => insert.run(name));
    }
  }),
);
db.close();
