/**
 * A size-limited tmpfs for full-disk tests, and a filler that takes every free byte of it. Needs
 * root (mount); under CI a missing prerequisite is a failure, elsewhere a loud skip. Unmounted by
 * `unmount()` (call it from after()) and by an 'exit' handler, even when a test failed.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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
  /** Deletes the filler. */
  free(): void;
  unmount(): void;
}

export function mountSmallDisk(sizeMb: number): SmallDisk {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-small-disk-'));
  const made = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0777`, 'tmpfs', dir], {
    encoding: 'utf8',
  });
  if (made.status !== 0) throw new Error(`mount tmpfs failed: ${made.stderr}`);
  const filler = join(dir, 'filler');
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
    free: () => rmSync(filler, { force: true }),
    unmount,
  };
}
