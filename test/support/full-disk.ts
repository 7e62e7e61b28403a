/**
 * Full disks for the hostile tests: a size-limited tmpfs (mount, fill every free byte, free,
 * unmount) and the fault schedule every full-disk round uses — fill some time into a storm, keep
 * it full (optionally until the store stopped by itself), free it, and restart a store that exited,
 * as its supervisor would. Needs root (mount); under CI a missing prerequisite is a failure,
 * elsewhere a loud skip. A disk is unmounted by `unmount()` (`smallDiskForSuite` does it in after())
 * and by an 'exit' handler, even when a test failed.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before } from 'node:test';
import type { OwnedPgServer } from './pg-cluster.js';
import type { OwnedCluster, OwnedRedis } from './redis.js';

/** Why full-disk tests cannot run here (null when they can); throws under CI. */
export function tmpfsUnavailable(): string | null {
  let why: string | null = null;
  if (process.getuid?.() !== 0) why = 'not root (mount -t tmpfs)';
  else {
    const dir = mkdtempSync(join(tmpdir(), 'dibs-tmpfs-probe-'));
    const made = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { encoding: 'utf8' });
    if (made.status !== 0) why = `cannot mount a tmpfs: ${made.stderr.trim()}`;
    else spawnSync('umount', [dir]);
    rmSync(dir, { recursive: true, force: true });
  }
  if (why && process.env.CI === 'true') throw new Error(`full-disk tests (CI=true): ${why}`);
  if (why) process.stderr.write(`\n*** SKIPPING full-disk tests: ${why}\n\n`);
  return why;
}

export interface SmallDisk {
  dir: string;
  /** Writes a filler file until the disk is full; returns the bytes it took. */
  fill(): number;
  /** Deletes the filler, and the reserve if the disk has one. */
  free(): void;
  unmount(): void;
}

/**
 * `reserveMb`: room taken at mount and given back by the first `free()`, so that freeing frees at
 * least that much even when the store's own files filled the disk before the fault did (a SQLite
 * WAL grew past a 16 MB disk within a storm's first 200 ms on a fast machine; the filler then took
 * nothing and freeing it freed nothing).
 */
export function mountSmallDisk(sizeMb: number, reserveMb = 0): SmallDisk {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-small-disk-'));
  const made = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0777`, 'tmpfs', dir], {
    encoding: 'utf8',
  });
  if (made.status !== 0) throw new Error(`mount tmpfs failed: ${made.stderr}`);
  const filler = join(dir, 'filler');
  const reserve = join(dir, 'reserve');
  if (reserveMb > 0) writeFileSync(reserve, Buffer.alloc(reserveMb * 1024 * 1024));
  let mounted = true;
  const unmount = () => {
    if (!mounted) return;
    mounted = false;
    spawnSync('umount', ['-l', dir]);
    rmSync(dir, { recursive: true, force: true });
    process.off('exit', unmount);
  };
  process.on('exit', unmount);
  return {
    dir,
    fill() {
      const fd = openSync(filler, 'a');
      const chunk = Buffer.alloc(64 * 1024);
      let taken = 0;
      try {
        for (;;) {
          try {
            taken += writeSync(fd, chunk);
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
            // take the last partial page too
            for (let size = 32 * 1024; size >= 512; size /= 2) {
              try {
                taken += writeSync(fd, chunk.subarray(0, size));
              } catch {
                /* full */
              }
            }
            return taken;
          }
        }
      } finally {
        closeSync(fd);
      }
    },
    free: () => {
      rmSync(filler, { force: true });
      rmSync(reserve, { force: true });
    },
    unmount,
  };
}

/** For a describe block: a small disk mounted before its tests and unmounted after them. */
export function smallDiskForSuite(sizeMb: number, reserveMb = 0): () => SmallDisk {
  let disk: SmallDisk | undefined;
  before(() => {
    disk = mountSmallDisk(sizeMb, reserveMb);
  });
  after(() => {
    disk?.unmount();
  });
  return () => {
    if (!disk) throw new Error('the small disk is mounted in before()');
    return disk;
  };
}

/** A store process the test supervises: restarted after the disk was freed if it exited. */
export interface Supervised {
  name: string;
  down(): boolean;
  restart(): Promise<void>;
}

const exited = (r: OwnedRedis) => r.process.exitCode !== null || r.process.signalCode !== null;

export const supervisedRedis = (redis: OwnedRedis): Supervised => ({
  name: 'redis',
  down: () => exited(redis),
  restart: () => redis.restart(),
});

/** Down when any node exited; the restarted nodes rejoin with their slots. */
export const supervisedCluster = (cluster: OwnedCluster): Supervised => ({
  name: 'the cluster',
  down: () => cluster.nodes.some(exited),
  restart: () => cluster.restartDead(),
});

export const supervisedPg = (server: OwnedPgServer): Supervised => ({
  name: 'PostgreSQL',
  down: () => !server.alive(),
  restart: () => server.restart(),
});

export interface DiskFault {
  /** How long into the storm the disk is filled. */
  afterMs: number;
  /** How long it stays full (after `untilDown`, if given). Omitted: it stays full (the test frees it). */
  fullMs?: number;
  /**
   * Keep it full until this store stopped by itself (at most `maxMs`) — PostgreSQL does after a WAL
   * PANIC, Redis with `appendfsync always` at its first AOF write that finds no room. `push`, if
   * given, is another tenant's write, repeated while the store is up: the store then meets the full
   * disk by its own writes, not only if the traffic under test happens to write past the room left
   * in its files' last pages.
   */
  untilDown?: { store: Supervised; maxMs: number; push?: () => Promise<unknown> };
  /** Run while the disk is full (a probe from the test process); its answer goes into the log. */
  whileFull?: () => Promise<string>;
  /** Restarted once space is freed, if it exited. */
  supervised?: Supervised;
}

/** Fills the disk on the schedule, frees it, restarts what stopped; resolves to what it did, for the log. */
export async function diskFault(disk: SmallDisk, fault: DiskFault): Promise<string> {
  await sleep(fault.afterMs);
  const taken = disk.fill();
  const filledAt = performance.now();
  let log = `disk filled ${fault.afterMs} ms into the storm (${(taken / 1e6).toFixed(1)} MB)`;
  if (fault.untilDown) {
    const { store, maxMs, push } = fault.untilDown;
    while (!store.down() && performance.now() - filledAt < maxMs) {
      if (push) await push().catch(() => sleep(50));
      else await sleep(50);
    }
    log += store.down()
      ? `; ${store.name} stopped by itself ${(performance.now() - filledAt).toFixed(0)} ms later`
      : `; ${store.name} stayed up`;
  }
  if (fault.fullMs === undefined) return `${log}; kept full`;
  await sleep(fault.fullMs);
  if (fault.whileFull) log += `; while full: ${await fault.whileFull()}`;
  const store = fault.supervised ?? fault.untilDown?.store;
  const exited = store?.down() ?? false;
  disk.free();
  log += `; freed after ${((performance.now() - filledAt) / 1000).toFixed(1)} s`;
  if (store && exited) {
    await store.restart();
    log += `, ${store.name} had exited: restarted (its supervisor)`;
  } else if (store) log += `, ${store.name} stayed up`;
  return log;
}
