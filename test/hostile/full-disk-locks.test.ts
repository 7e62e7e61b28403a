/**
 * Locks on a full disk: the lock store's files on a small tmpfs that the test fills while 3 worker
 * processes take two keys and write through a fenced resource, then frees (the round:
 * test/support/full-disk-locks.ts). Every lock call while full answers `unavailable` or an answer
 * the store kept, the history checker finds no two holders and no fence out of order, fences only
 * grow, and the store serves locks again by itself once space is freed (a store that exited is
 * restarted, as its supervisor would).
 *
 * - SQLite (WAL mode): a write needs new space only when the WAL or the database file grows. The
 *   test truncates the WAL (`wal_checkpoint(TRUNCATE)`, what a quiet database's checkpoint leaves)
 *   just before filling, so the next lock writes must grow it.
 * - Redis, AOF `appendfsync always`: Redis exits at the first AOF write it cannot make; restarted
 *   after freeing, it replays the AOF. The probes run on the full disk first; then another tenant's
 *   values fill the AOF's last page, so Redis meets the full disk by its own state (small lock
 *   writes fit in the room a page has left: at load the storm's few writes and the probes did not
 *   always reach it, and Redis stayed up through the fault).
 * - PostgreSQL, WAL on the full disk: lock writes are small, so a writer of bulk rows on the same
 *   server (another tenant) fills the current WAL segment; creating the next one PANICs and the
 *   server stops; restarted after freeing, recovery replays every commit.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import { openDibs, type Dibs } from '../../src/index.js';
import { LONG } from '../support/faults.js';
import { diskFault, smallDiskForSuite, supervisedPg, supervisedRedis, tmpfsUnavailable } from '../support/full-disk.js';
import { lockRoundOnFullDisk } from '../support/full-disk-locks.js';
import { requirePgBinaries, startPgServer, type OwnedPgServer } from '../support/pg-cluster.js';
import { requirePostgres } from '../support/postgres.js';
import { redisServerInstalled, startRedis, type OwnedRedis } from '../support/redis.js';

const skip = tmpfsUnavailable() ?? ((await requirePostgres()) || null);
const DURATION_MS = LONG ? 20_000 : 3000;
const TENANT_VALUE = 'x'.repeat(64 * 1024);

// The three stores at once: each round mostly waits (process start-up, the full disk, a restart),
// and each has its own disk, store and guarded table.
describe('locks on a full disk', { concurrency: true }, () => {
  describe('locks on a full disk: SQLite', { skip: skip ?? false, timeout: 300_000 }, () => {
    const smallDisk = smallDiskForSuite(16);
    let dibs: Dibs;
    let file: string;
    before(async () => {
      file = join(smallDisk().dir, 'dibs.db');
      dibs = await openDibs(`sqlite:${file}`);
    });
    after(async () => {
      await dibs?.close();
    });

    it('acquire, renew and release while the disk is full: `unavailable` or kept, history valid, fences only grow, recovers', async () => {
      await lockRoundOnFullDisk({
        label: 'sqlite',
        store: `sqlite:${file}`,
        dibs,
        durationMs: DURATION_MS,
        fault: async (whileFull) => {
          await sleep(300);
          // a WAL with no room left in it: the next commits must grow the file
          const db = new Database(file);
          db.pragma('wal_checkpoint(TRUNCATE)');
          db.close();
          return diskFault(smallDisk(), { afterMs: 0, fullMs: 1500, whileFull });
        },
      });
    });
  });

  describe('locks on a full disk: Redis AOF appendfsync always', {
    skip: skip ?? (redisServerInstalled() ? false : 'redis-server missing'),
    timeout: 300_000,
  }, () => {
    const smallDisk = smallDiskForSuite(24);
    let redis: OwnedRedis;
    let dibs: Dibs;
    let store: string;
    before(async () => {
      const dir = join(smallDisk().dir, 'redis');
      mkdirSync(dir);
      redis = await startRedis(['--appendonly', 'yes', '--appendfsync', 'always'], dir);
      // a Redis that exited answers at once (refused); the bound is for a loaded machine's slow answers (2 s timed out at load ~65)
      store = `${redis.url}?prefix=disklocks&commandTimeoutMs=10000`;
      dibs = await openDibs(store);
    });
    after(async () => {
      await dibs?.close();
      await redis?.stop();
    });

    it('acquire, renew and release while the disk is full: `unavailable` or kept, history valid, fences only grow, recovers', async () => {
      let downAnswer = '';
      await lockRoundOnFullDisk({
        label: 'redis AOF always',
        store,
        dibs,
        durationMs: DURATION_MS,
        felt: () => downAnswer === 'unavailable',
        fault: async (whileFull) => {
          const tenant = new Redis(redis.port, '127.0.0.1', { maxRetriesPerRequest: 0, retryStrategy: () => null });
          tenant.on('error', () => {});
          let probed = '';
          let values = 0;
          const supervised = supervisedRedis(redis);
          try {
            const log = await diskFault(smallDisk(), {
              afterMs: 300,
              untilDown: {
                store: supervised,
                maxMs: 30_000,
                push: async () => {
                  probed ||= await whileFull();
                  await tenant.set(`tenant:${values++}`, TENANT_VALUE);
                },
              },
              fullMs: 0,
              // Redis has exited and is not restarted yet: a lock call now must answer `unavailable`
              // (the workers' calls, retried by the client while it reconnects, may never see it down)
              whileFull: async () => {
                if (!supervised.down()) return 'Redis up';
                downAnswer = await dibs.locks.acquire('probe-down', { ttlMs: 5000, waitMs: 0 }).then(
                  (lease) => (lease ? `ok (fence ${lease.fence})` : 'held'),
                  (error: { code?: string }) => error.code ?? String(error),
                );
                assert.equal(downAnswer, 'unavailable', 'a lock call while Redis was down answered unavailable');
                return `Redis down, acquire ${downAnswer}`;
              },
            });
            return `${log}; while full, before Redis stopped: ${probed}; ${values} values (64 kB) sent by another tenant`;
          } finally {
            tenant.disconnect();
          }
        },
      });
    });
  });

  describe('locks on a full disk: PostgreSQL WAL', {
    skip: skip ?? (requirePgBinaries() || false),
    timeout: 300_000,
  }, () => {
    const smallDisk = smallDiskForSuite(24);
    let server: OwnedPgServer;
    let dibs: Dibs;
    let store: string;
    before(async () => {
      server = await startPgServer({
        waldir: `${smallDisk().dir}/pg_wal`,
        walSegmentMb: 1,
        conf: ['wal_recycle = off', 'min_wal_size = 4MB', 'max_wal_size = 8MB', 'fsync = off'],
      });
      store = `${server.url()}?schema=disklocks&poolSize=4&queryTimeoutMs=3000&connectTimeoutMs=2000`;
      dibs = await openDibs(store);
      await server.query('CREATE TABLE public.bulk (b text)');
      await server.query('ALTER TABLE public.bulk ALTER COLUMN b SET STORAGE EXTERNAL');
    });
    after(async () => {
      await dibs?.close();
      await server?.stop();
    });

    it('acquire, renew and release while the WAL disk is full: `unavailable` or kept, history valid, fences only grow, recovers', async () => {
      const pg = supervisedPg(server);
      await lockRoundOnFullDisk({
        label: 'postgres WAL',
        store,
        dibs,
        durationMs: DURATION_MS,
        fault: async (whileFull) => {
          let bulk = 0;
          let stop = false;
          // another tenant's bulk rows (uncompressed 256 kB each) fill the current WAL segment once the disk is full
          const pushing = (async () => {
            await sleep(350);
            while (!stop && !pg.down()) {
              try {
                await server.query(
                  "INSERT INTO public.bulk SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 8192)",
                );
                bulk++;
              } catch {
                await sleep(50);
              }
            }
          })();
          const log = await diskFault(smallDisk(), {
            afterMs: 300,
            untilDown: { store: pg, maxMs: 20_000 },
            fullMs: 0,
            whileFull,
          }).finally(() => {
            stop = true;
          });
          await pushing;
          return `${log}; ${bulk} bulk rows written by another tenant meanwhile`;
        },
      });
    });
  });
});
