/**
 * A SQLite store whose clock the test moves. SQLite has no server: every step reads the clock of
 * the process that runs it (SQLite's 'now', the C library's CLOCK_REALTIME). So "the store's clock"
 * is the clock of each process sharing the file, and moving it means running those processes under
 * test/support/clockshift.c:
 *
 * - the test's own calls go through an agent process (clock-agent.ts) on the store's main clock;
 *   `dibs(url)` answers a Dibs whose pools / sales / locks calls run there, and `jump` / `rate`
 *   move that clock;
 * - worker processes run with `workerPrefix(i)`, each on a clock of its own that `jumpWorker(i, s)`
 *   moves — processes that disagree about the time, as hosts with skewed clocks sharing a network
 *   file system would, or one whose clock steps while another's does not.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Dibs } from '../../src/index.js';
import { type ClockControl, clockShiftControl, type FakeClockStore } from './faketime.js';
import { workerArgs } from './node-worker.js';

const AGENT = new URL('./clock-agent.ts', import.meta.url).pathname;
const ROOT = new URL('../..', import.meta.url).pathname;

export interface FakeClockSqlite extends FakeClockStore {
  dir: string;
  /** A Dibs on `url` whose calls run in the agent, on the store's main clock. */
  dibs(url: string): Promise<Dibs>;
  /** The argv prefix that runs worker `i` on its own clock. */
  workerPrefix(i: number): string[];
  /** Moves worker `i`'s clock to real + `offsetS`. */
  jumpWorker(i: number, offsetS: number): void;
}

class Agent {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  readonly ready: Promise<void>;

  constructor(private readonly child: ChildProcess) {
    let ready!: () => void;
    this.ready = new Promise((resolve) => (ready = resolve));
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const message = JSON.parse(line) as {
        id?: number;
        ready?: boolean;
        value?: unknown;
        error?: { code?: string; message: string };
      };
      if (message.ready) return ready();
      const waiter = this.waiting.get(message.id!);
      this.waiting.delete(message.id!);
      if (message.error) waiter?.reject(Object.assign(new Error(message.error.message), { code: message.error.code }));
      else waiter?.resolve(message.value);
    });
    child.once('exit', (code, signal) => {
      for (const waiter of this.waiting.values())
        waiter.reject(new Error(`clock agent exited (${code ?? signal}): ${stderr}`));
      this.waiting.clear();
    });
  }

  call(request: object): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.child.stdin!.write(`${JSON.stringify({ id, ...request })}\n`);
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.stdin!.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }
}

/** A Dibs whose area methods (dibs.sales.buy(…), dibs.locks.acquire(…)) run in the agent. */
function remoteDibs(agent: Agent, handle: number): Dibs {
  const areas = new Map<string, object>();
  return new Proxy({} as Dibs, {
    get: (_target, area: string) => {
      if (area === 'close') return () => agent.call({ handle, close: true });
      if (area === 'then') return undefined; // not a promise
      if (!areas.has(area))
        areas.set(
          area,
          new Proxy(
            {},
            {
              get:
                (_t, method: string) =>
                (...args: unknown[]) =>
                  agent.call({ handle, path: [area, method], args }),
            },
          ),
        );
      return areas.get(area);
    },
  });
}

export async function startFakeClockSqlite(): Promise<FakeClockSqlite> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-clockshift-sqlite-'));
  const main = clockShiftControl(dir);
  const workers = new Map<number, ClockControl>();
  const worker = (i: number) => {
    let control = workers.get(i);
    if (!control) {
      mkdirSync(join(dir, `w${i}`), { recursive: true });
      control = clockShiftControl(join(dir, `w${i}`));
      workers.set(i, control);
    }
    return control;
  };
  const child = spawn(process.execPath, [...workerArgs(AGENT)], {
    cwd: ROOT,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...main.env },
  });
  const agent = new Agent(child);
  await Promise.race([
    agent.ready,
    new Promise((_, reject) => child.once('exit', (code) => reject(new Error(`clock agent exited ${code}`)))),
  ]);
  return {
    dir,
    url: `sqlite:${join(dir, 'dibs.db')}`,
    jump: main.jump,
    rate: main.rate,
    now: async () => (await agent.call({ now: true })) as number,
    dibs: async (url) => remoteDibs(agent, (await agent.call({ open: url })) as number),
    workerPrefix: (i) => worker(i).prefix,
    jumpWorker: (i, offsetS) => worker(i).jump(offsetS),
    stop: async () => {
      await agent.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
