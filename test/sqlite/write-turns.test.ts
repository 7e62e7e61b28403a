/**
 * Writers in several processes take the SQLite write lock in turn (wait-board.ts). Without
 * turns, the process that just committed takes the lock straight back and the others wait for
 * hundreds of milliseconds; the order of rows the processes append shows which happened.
 */
import Database from 'better-sqlite3';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { openDatabase, write } from '../../src/backends/sqlite/database.js';
import { workerArgs } from '../support/node-worker.js';

const WORKER = fileURLToPath(new URL('../support/write-turns-worker.ts', import.meta.url));
const PROCESSES = 4;
const WRITES = 800;
/**
 * Longest run of one process's rows allowed while all are writing: a few of its 8-row batches.
 * Not 1: on a loaded machine a waiter descheduled past the board's staleness bound is passed over
 * (seen: 5 batches). The unfair lock gave runs of ~300 rows.
 */
const MAX_STREAK = 10 * 8;

async function runWriters(file: string): Promise<void> {
  const children = Array.from({ length: PROCESSES }, (_, i) =>
    spawn(process.execPath, [...workerArgs(WORKER), file, `p${i}`, String(WRITES)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    }),
  );
  const kill = setTimeout(() => children.forEach((c) => c.kill('SIGKILL')), 120_000);
  try {
    await Promise.all(children.map((c) => new Promise<void>((resolve) => c.stdout.once('data', () => resolve()))));
    for (const c of children) c.stdin.end('go\n');
    const codes = await Promise.all(children.map((c) => new Promise<number | null>((r) => c.once('exit', r))));
    assert.deepEqual(codes, Array(PROCESSES).fill(0), 'every writer finished');
  } finally {
    clearTimeout(kill);
  }
}

/** The longest run of rows by one process inside the window where every process still had rows to come. */
/** The rows between every process's first and the first process's last: when all were writing. */
function window(procs: string[]): { from: number; to: number } {
  const first = new Map<string, number>();
  const last = new Map<string, number>();
  procs.forEach((p, i) => {
    if (!first.has(p)) first.set(p, i);
    last.set(p, i);
  });
  return { from: Math.max(...first.values()), to: Math.min(...last.values()) };
}

export function longestStreak(procs: string[]): number {
  const { from, to } = window(procs);
  let longest = 0;
  let streak = 0;
  for (let i = from; i <= to; i++) {
    streak = i > from && procs[i] === procs[i - 1] ? streak + 1 : 1;
    longest = Math.max(longest, streak);
  }
  return longest;
}

describe('sqlite: write turns across processes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-write-turns-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('the checker flags a hog and passes a rotation', () => {
    const rotation = Array.from({ length: 64 }, (_, i) => `p${Math.floor(i / 8) % 4}`);
    assert.equal(longestStreak(rotation), 8);
    const hog = [...rotation, ...Array(100).fill('p0'), ...rotation];
    assert.ok(longestStreak(hog) > MAX_STREAK);
  });

  it(`${PROCESSES} processes × ${WRITES} writes: nobody keeps the lock for more than a few turns`, async () => {
    const file = join(dir, 'turns.db');
    const setup = new Database(file);
    setup.pragma('journal_mode = WAL');
    setup.exec('CREATE TABLE turns (id INTEGER PRIMARY KEY AUTOINCREMENT, proc TEXT NOT NULL)');
    setup.close();
    await runWriters(file);
    const db = new Database(file, { readonly: true });
    const procs = db.prepare('SELECT proc FROM turns ORDER BY id').pluck().all() as string[];
    db.close();
    assert.equal(procs.length, PROCESSES * WRITES, 'every acknowledged write is there');
    const streak = longestStreak(procs);
    // Started together, taking turns, they all keep writing until near the end; a hog finishes
    // first while others have barely begun.
    const { from, to } = window(procs);
    // a third, not a half: on a loaded machine one worker may be scheduled late after `go` (seen:
    // all 4 writing for 1,456 of 3,200 rows), while a hog leaves a window of a few batches
    assert.ok(
      to - from + 1 >= procs.length / 3,
      `all ${PROCESSES} were writing for only ${to - from + 1} of ${procs.length} rows`,
    );
    assert.ok(streak <= MAX_STREAK, `one process appended ${streak} rows in a row while the others waited`);
  });

  it('a crashed waiter left on the board holds nobody up; a held lock still ends in unavailable', async () => {
    const file = join(dir, 'stale.db');
    const options = { busyTimeoutMs: 400, synchronous: 'full' as const };
    // A waiter that arrived long ago and whose heartbeat stopped just now (it crashed mid-wait).
    const entry = Buffer.alloc(16);
    const now = performance.timeOrigin + performance.now();
    entry.writeDoubleLE(now - 60_000, 0);
    entry.writeDoubleLE(now, 8);
    writeFileSync(`${file}-dibs-wait`, Buffer.concat([Buffer.alloc(16 * 3), entry]));
    const db = await openDatabase(file, options);
    try {
      const started = performance.now();
      await write(db, options, () => db.exec('CREATE TABLE t (x)'));
      assert.ok(performance.now() - started < options.busyTimeoutMs, 'the stale entry was skipped, not waited out');

      const holder = new Database(file);
      holder.exec('BEGIN IMMEDIATE');
      try {
        const t = performance.now();
        await assert.rejects(
          write(db, options, () => db.exec('INSERT INTO t VALUES (1)')),
          (e: { code?: string }) => e.code === 'unavailable',
        );
        assert.ok(performance.now() - t >= options.busyTimeoutMs - 5, 'it waited its configured time first');
      } finally {
        holder.exec('ROLLBACK');
        holder.close();
      }
    } finally {
      db.close();
    }
  });
});
