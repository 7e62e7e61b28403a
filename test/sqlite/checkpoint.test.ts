/**
 * A file-backed SQLite connection checkpoints the WAL itself, after a commit has been answered
 * (database.ts checkpointSoon), instead of inside COMMIT (SQLite's autocheckpoint, turned off for
 * it). If that ever stops, nothing else copies the WAL back and it grows with every write: this
 * writes ~6 times the checkpoint mark through one connection, with another connection open (as a
 * second process would be), and checks that the WAL was restarted rather than grown.
 */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { after, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { tempSqliteStore } from '../support/sqlite.js';

const temp = tempSqliteStore();
after(() => temp.cleanup());

it('sqlite: the WAL is checkpointed after commits and stays near the 1,000-frame mark', async () => {
  const writer = await openDibs(temp.store);
  const other = await openDibs(temp.store);
  try {
    await writer.pools.create({ name: 'wal' });
    const pad = 'x'.repeat(100);
    // 100 imports of 800 long codes: about 6,000 WAL frames of 4 KiB in all
    for (let b = 0; b < 100; b++)
      await writer.pools.importCodes(
        'wal',
        Array.from({ length: 800 }, (_, i) => `${pad}-${b}-${i}`),
      );
    assert.equal((await other.pools.stats('wal')).total, 80_000);
    const walBytes = statSync(`${temp.store.slice('sqlite:'.length)}-wal`).size;
    // 1,000 frames past the mark at most, plus the last commit: well under 3,000 frames
    assert.ok(walBytes < 3_000 * 4_120, `the WAL grew to ${walBytes} bytes`);
  } finally {
    await other.close();
    await writer.close();
  }
});
