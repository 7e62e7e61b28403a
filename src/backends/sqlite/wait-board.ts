/**
 * A cross-process waiting list for the SQLite write lock, kept in a small side file beside the
 * database (`<file>-dibs-wait`).
 *
 * Why: SQLite's write lock is not fair. A process that just committed takes the lock again at
 * once, while the others sleep between attempts, so one process can keep it for many turns and
 * the others' waits grow to hundreds of milliseconds. With this board, a process that has waited
 * announces since when; everyone else (including the process that just committed) stands back
 * while an older waiter is alive, so the lock goes round in arrival order.
 *
 * The board only orders attempts; SQLite's lock still decides who writes, so a torn, stale or
 * missing board costs fairness, never correctness. A waiter stamps a heartbeat on every poll;
 * an entry whose heartbeat is older than STALE_MS (a crashed or frozen process) is ignored.
 */
import { closeSync, constants, type FSWatcher, openSync, readSync, watch, writeSync } from 'node:fs';

const SLOTS = 256;
/** Past the slots: a byte the releasing process rewrites so that waiters' file watches fire. */
const BELL = SLOTS * 16;
/** Each slot: [waiting since, heartbeat], milliseconds since the epoch, 0 = not waiting. */
const SLOT_BYTES = 16;
/** A waiter not heard from for this long is treated as gone. */
const STALE_MS = 50;
/** How often a waiter refreshes its heartbeat (each write wakes every watcher, so not on every poll). */
const HEARTBEAT_MS = 10;

/** How often a waiter looks again when the bell works. */
const POLL_WITH_BELL_MS = 10;

let opened = 0;

export class WaitBoard {
  private readonly view = Buffer.alloc(SLOTS * SLOT_BYTES);
  private readonly own = Buffer.alloc(SLOT_BYTES);
  private readonly bell = Buffer.alloc(1);
  private readonly heard = Buffer.alloc(1);
  private beat = 0;
  private since = 0;
  private watcher: FSWatcher | undefined;
  private ring: (() => void) | undefined;

  private constructor(
    private readonly fd: number,
    private readonly slot: number,
    path: string,
  ) {
    try {
      // Wakes a waiter as soon as a holder releases, instead of at its next poll.
      // Every write to the board fires the watch; only a changed bell means a release.
      this.watcher = watch(path, { persistent: false }, () => {
        if (!this.ring || quietly(() => readSync(this.fd, this.heard, 0, 1, BELL)) !== 1) return;
        if (this.heard[0] !== this.bell[0]) {
          this.bell[0] = this.heard[0]!;
          this.ring();
        }
      });
      this.watcher.on('error', () => {
        this.watcher?.close();
        this.watcher = undefined;
      });
    } catch {
      this.watcher = undefined;
    }
  }

  /** Opens (creating) the board beside `filename`; undefined for in-memory or unwritable places. */
  static open(filename: string): WaitBoard | undefined {
    if (filename === '' || filename === ':memory:' || filename.startsWith('file:')) return undefined;
    try {
      const path = `${filename}-dibs-wait`;
      // Not append mode: that would turn every positioned write into an append.
      const fd = openSync(path, constants.O_RDWR | constants.O_CREAT, 0o644);
      // Distinct slots for distinct connections, also two of one process.
      return new WaitBoard(fd, (process.pid * 7 + opened++) % SLOTS, path);
    } catch {
      return undefined;
    }
  }

  /**
   * Resolves at the next poll, or earlier when a holder rings that it released the lock. With the
   * bell, polls are only the fallback (a stale waiter to pass, a release that did not ring): rare
   * polls leave the CPU to the holder, which on a busy machine measured better in throughput, p50
   * and p99 than polling every millisecond. Without a file watch, poll as often as timers allow.
   */
  pause(): Promise<void> {
    const ms = this.watcher ? POLL_WITH_BELL_MS : 1;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      this.ring = done;
      function done() {
        clearTimeout(timer);
        resolve();
      }
    }).then(() => {
      this.ring = undefined;
    });
  }

  /** After a commit: if anyone else is waiting, ring them awake. Never throws (it runs after a commit). */
  released(now: number): void {
    const since = this.since;
    this.since = 0;
    const waiting = this.shouldYield(now);
    this.since = since;
    if (waiting)
      quietly(() => {
        readSync(this.fd, this.bell, 0, 1, BELL);
        this.bell[0] = (this.bell[0]! + 1) & 0xff;
        writeSync(this.fd, this.bell, 0, 1, BELL);
      });
  }

  /** True while another live process has waited longer than we have (or at all, if we have not). */
  shouldYield(now: number): boolean {
    const bytes = quietly(() => readSync(this.fd, this.view, 0, this.view.length, 0)) ?? 0;
    for (let offset = 0; offset + SLOT_BYTES <= Math.min(bytes, BELL); offset += SLOT_BYTES) {
      if (offset === this.slot * SLOT_BYTES) continue;
      const since = this.view.readDoubleLE(offset);
      if (since === 0 || now - this.view.readDoubleLE(offset + 8) > STALE_MS) continue;
      if (this.since === 0 || since < this.since) return true;
    }
    return false;
  }

  /** Marks us waiting (keeping our first arrival time) and refreshes our heartbeat. */
  wait(now: number): void {
    if (this.since !== 0 && now - this.beat < HEARTBEAT_MS) return;
    if (this.since === 0) this.since = now;
    this.beat = now;
    this.own.writeDoubleLE(this.since, 0);
    this.own.writeDoubleLE(now, 8);
    quietly(() => writeSync(this.fd, this.own, 0, SLOT_BYTES, this.slot * SLOT_BYTES));
  }

  /** Clears our entry: we hold the lock, or gave up. */
  done(): void {
    if (this.since === 0) return;
    this.since = 0;
    this.own.fill(0);
    quietly(() => writeSync(this.fd, this.own, 0, SLOT_BYTES, this.slot * SLOT_BYTES));
  }

  close(): void {
    this.watcher?.close();
    quietly(() => closeSync(this.fd));
  }
}

/** The board is advice: a failing read or write of it must never fail a database write. */
function quietly<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}
