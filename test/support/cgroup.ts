/**
 * A memory cgroup for one test-owned process tree: a child of the test process' own memory cgroup
 * (so every limit above it still applies), with a hard limit and no swap. cgroup v2 (`memory.max`)
 * where the memory controller is on the unified hierarchy, else v1 (`memory.limit_in_bytes`, e.g.
 * a Docker host with the hybrid layout). Processes enter it through `wrap(argv)` (a shell that
 * writes its own pid into the cgroup, then execs), so they are limited from their first byte.
 * `remove()` kills what is left in it and removes it; an 'exit' handler does too.
 */
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

interface Layout {
  version: 1 | 2;
  /** The test process' own memory cgroup directory. */
  parent: string;
}

function layout(): Layout | string {
  if (process.platform !== 'linux') return 'not Linux';
  const lines = readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n');
  const v1 = lines.map((l) => l.split(':')).find(([, controllers]) => controllers!.split(',').includes('memory'));
  if (v1) return { version: 1, parent: join('/sys/fs/cgroup/memory', v1[2]!) };
  const v2 = lines.find((l) => l.startsWith('0::'));
  const root = existsSync('/sys/fs/cgroup/cgroup.controllers')
    ? '/sys/fs/cgroup'
    : existsSync('/sys/fs/cgroup/unified/cgroup.controllers')
      ? '/sys/fs/cgroup/unified'
      : null;
  if (!v2 || !root) return 'no memory cgroup (neither a v1 memory hierarchy nor cgroup v2)';
  const parent = join(root, v2.slice(3));
  if (!readFileSync(join(parent, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('memory'))
    return `cgroup v2 at ${parent} has no memory controller delegated to it`;
  return { version: 2, parent };
}

/** Why a memory cgroup cannot be made here (null when it can); throws under CI. */
export function memoryCgroupUnavailable(): string | null {
  let why: string | null = null;
  const found = layout();
  if (typeof found === 'string') why = found;
  else {
    const probe = join(found.parent, `dibs-probe-${process.pid}`);
    try {
      mkdirSync(probe);
      const limit = join(probe, found.version === 1 ? 'memory.limit_in_bytes' : 'memory.max');
      if (!existsSync(limit)) why = `${limit} missing (memory controller not enabled for children of ${found.parent})`;
      else writeFileSync(limit, String(64 * 1024 * 1024));
    } catch (error) {
      why = `cannot create a child memory cgroup under ${found.parent}: ${(error as Error).message}`;
    } finally {
      try {
        rmdirSync(probe);
      } catch {
        /* not made */
      }
    }
  }
  if (why && process.env.CI === 'true') throw new Error(`memory cgroup tests (CI=true): ${why}`);
  if (why) process.stderr.write(`\n*** SKIPPING memory cgroup tests: ${why}\n\n`);
  return why;
}

export interface MemoryCgroup {
  dir: string;
  version: 1 | 2;
  limitBytes: number;
  /** Moves the limit (down too: the kernel reclaims to it first); no swap either way. */
  setLimit(bytes: number): void;
  /** Memory charged to the cgroup now (bytes). */
  usage(): number;
  /** argv that runs `argv` inside the cgroup. */
  wrap(argv: string[]): string[];
  /** Peak usage (bytes), and how many processes the kernel's OOM killer ended in it. */
  stats(): { peakBytes: number; oomKills: number };
  remove(): void;
}

const read = (file: string) => readFileSync(file, 'utf8').trim();

export function createMemoryCgroup(limitMb: number): MemoryCgroup {
  const found = layout();
  if (typeof found === 'string') throw new Error(found);
  const { version, parent } = found;
  const dir = join(parent, `dibs-${process.pid}-${Date.now()}`);
  mkdirSync(dir);
  const memsw = join(dir, 'memory.memsw.limit_in_bytes');
  const setLimit = (bytes: number) => {
    if (version === 1) {
      // memsw ≥ memory at every step (no swap either, where the kernel accounts it)
      const lowering = bytes < Number(read(join(dir, 'memory.limit_in_bytes')));
      if (lowering) writeFileSync(join(dir, 'memory.limit_in_bytes'), String(bytes));
      if (existsSync(memsw)) writeFileSync(memsw, String(bytes));
      if (!lowering) writeFileSync(join(dir, 'memory.limit_in_bytes'), String(bytes));
    } else {
      writeFileSync(join(dir, 'memory.max'), String(bytes));
      if (existsSync(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0');
    }
    cgroup.limitBytes = bytes;
  };
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    process.off('exit', remove);
    for (let attempt = 0; attempt < 50; attempt++) {
      const pids = read(join(dir, 'cgroup.procs')).split('\n').filter(Boolean);
      for (const pid of pids)
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          /* gone */
        }
      try {
        rmdirSync(dir);
        return;
      } catch {
        // still populated for a moment after the kill
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
      }
    }
  };
  process.on('exit', remove);
  const cgroup: MemoryCgroup = {
    dir,
    version,
    limitBytes: 0,
    setLimit,
    usage: () => Number(read(join(dir, version === 1 ? 'memory.usage_in_bytes' : 'memory.current'))),
    wrap: (argv) => ['/bin/sh', '-c', `echo $$ > ${join(dir, 'cgroup.procs')} && exec "$@"`, 'sh', ...argv],
    stats: () => {
      if (version === 1)
        return {
          peakBytes: Number(read(join(dir, 'memory.max_usage_in_bytes'))),
          oomKills: Number(/oom_kill (\d+)/.exec(read(join(dir, 'memory.oom_control')))?.[1] ?? 0),
        };
      return {
        peakBytes: existsSync(join(dir, 'memory.peak')) ? Number(read(join(dir, 'memory.peak'))) : Number.NaN,
        oomKills: Number(/oom_kill (\d+)/.exec(read(join(dir, 'memory.events')))?.[1] ?? 0),
      };
    },
    remove,
  };
  setLimit(limitMb * 1024 * 1024);
  return cgroup;
}
