/**
 * Separate "hosts" on one machine for hostile-network tests: Linux network namespaces joined by
 * veth pairs, each link a private /30 in 10.213.0.0/16 that exists only inside the namespaces (no
 * route, no address and no rule is added outside them; the test process itself talks to the
 * test-owned stores over Unix sockets or through helper processes inside a namespace). Faults are
 * nftables rules inside the store's namespace: drop one direction only (the other side never sees
 * a FIN or RST), drop both, or reject with a TCP reset; `heal()` removes them.
 *
 * Every namespace name carries this run's prefix and process id (`dibsh<pid>-<name>`). They are
 * deleted by `teardown()` (call it from after()), by an 'exit' / signal handler, and at the start of
 * a later run when the process that made them is gone. Deleting a namespace deletes its veths and
 * nftables rules with it.
 *
 * Needs root, `ip` (iproute2) and `nft` (nftables). Under CI a missing prerequisite is a failure;
 * elsewhere the tests skip with a loud message.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';

const PREFIX = 'dibsh';
const PATTERN = /^dibsh(\d+)-/;

function run(args: string[], allowFail = false): string {
  const result = spawnSync(args[0]!, args.slice(1), { encoding: 'utf8', timeout: 20_000 });
  if (!allowFail && result.status !== 0)
    throw new Error(`${args.join(' ')} failed (${result.status}): ${result.stderr}`);
  return result.stdout;
}

/** Why these tests cannot run here, or null. Under CI: throws instead. */
export function netnsUnavailable(): string | null {
  let why: string | null = null;
  if (process.getuid?.() !== 0) why = 'not root';
  else if (spawnSync('ip', ['-V']).status !== 0) why = '`ip` is missing (apt-get install iproute2)';
  else if (spawnSync('nft', ['--version']).status !== 0) why = '`nft` is missing (apt-get install nftables)';
  else {
    const probe = `${PREFIX}${process.pid}-probe`;
    const made = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' });
    if (made.status !== 0) why = `cannot create a network namespace: ${made.stderr.trim()}`;
    else spawnSync('ip', ['netns', 'del', probe]);
  }
  if (why && process.env.CI === 'true')
    throw new Error(`hostile-network tests need root, iproute2 and nftables (CI=true): ${why}`);
  if (why) process.stderr.write(`\n*** SKIPPING hostile-network tests: ${why}\n\n`);
  return why;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Deletes namespaces left by earlier runs whose process is gone. */
export function removeLeftovers(): void {
  for (const line of run(['ip', 'netns', 'list'], true).split('\n')) {
    const name = line.split(' ')[0] ?? '';
    const match = PATTERN.exec(name);
    if (match && Number(match[1]) !== process.pid && !alive(Number(match[1]))) run(['ip', 'netns', 'del', name], true);
  }
}

export type Direction = 'to-store' | 'from-store' | 'both' | 'reject';

export interface Host {
  name: string;
  /** Runs a command in this host's namespace. */
  spawn(command: string, args: string[], options?: SpawnOptions): ChildProcess;
  /** The argv prefix that runs a command here (for spawn helpers that take one). */
  prefix: string[];
}

export interface Link {
  a: Host;
  b: Host;
  addressA: string;
  addressB: string;
}

export class Network {
  readonly hosts = new Map<string, Host>();
  private readonly links: Link[] = [];
  private children = new Set<ChildProcess>();
  private readonly onExit = () => this.teardownSync();
  private readonly onSignal = (signal: NodeJS.Signals) => {
    this.teardownSync();
    process.kill(process.pid, signal);
  };

  constructor() {
    removeLeftovers();
    process.once('exit', this.onExit);
    for (const s of ['SIGINT', 'SIGTERM'] as const) process.once(s, this.onSignal);
  }

  host(name: string): Host {
    const existing = this.hosts.get(name);
    if (existing) return existing;
    const ns = `${PREFIX}${process.pid}-${name}`;
    run(['ip', 'netns', 'add', ns]);
    run(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);
    const prefix = ['ip', 'netns', 'exec', ns];
    const host: Host = {
      name: ns,
      prefix,
      spawn: (command, args, options = {}) => {
        const child = spawn('ip', ['netns', 'exec', ns, command, ...args], options);
        this.children.add(child);
        child.once('exit', () => this.children.delete(child));
        return child;
      },
    };
    this.hosts.set(name, host);
    return host;
  }

  /** A veth pair between two hosts: 10.213.<n>.1 on `a`, .2 on `b`. */
  link(a: Host, b: Host): Link {
    const n = this.links.length + 1;
    const [va, vb] = [`dh${process.pid % 100000}a${n}`, `dh${process.pid % 100000}b${n}`];
    run(['ip', 'link', 'add', va, 'netns', a.name, 'type', 'veth', 'peer', 'name', vb, 'netns', b.name]);
    const link: Link = { a, b, addressA: `10.213.${n}.1`, addressB: `10.213.${n}.2` };
    run(['ip', '-n', a.name, 'addr', 'add', `${link.addressA}/30`, 'dev', va]);
    run(['ip', '-n', b.name, 'addr', 'add', `${link.addressB}/30`, 'dev', vb]);
    run(['ip', '-n', a.name, 'link', 'set', va, 'up']);
    run(['ip', '-n', b.name, 'link', 'set', vb, 'up']);
    this.links.push(link);
    return link;
  }

  /**
   * Cuts `link` as seen from its `a` side (the store): `to-store` drops what `b` sends (the store
   * never hears from the client again, not even its FIN), `from-store` drops what the store sends
   * (the client never hears an answer), `both` drops both, `reject` answers the client's packets
   * with a TCP reset. Replaces any fault already on the link.
   */
  cut(link: Link, direction: Direction): void {
    this.heal(link);
    const table = `dibsfault${this.links.indexOf(link) + 1}`;
    const rules: string[] = [];
    if (direction === 'to-store' || direction === 'both')
      rules.push(`add rule inet ${table} input ip saddr ${link.addressB} drop`);
    if (direction === 'from-store' || direction === 'both')
      rules.push(`add rule inet ${table} output ip daddr ${link.addressB} drop`);
    if (direction === 'reject')
      rules.push(`add rule inet ${table} input ip saddr ${link.addressB} meta l4proto tcp reject with tcp reset`);
    const script = [
      `add table inet ${table}`,
      `add chain inet ${table} input { type filter hook input priority 0 ; policy accept ; }`,
      `add chain inet ${table} output { type filter hook output priority 0 ; policy accept ; }`,
      ...rules,
    ].join('\n');
    const result = spawnSync('ip', ['netns', 'exec', link.a.name, 'nft', '-f', '-'], {
      input: script,
      encoding: 'utf8',
    });
    if (result.status !== 0) throw new Error(`nft failed: ${result.stderr}`);
  }

  /**
   * Random packet loss on `link`, on the store's side: each packet the worker host sends and each
   * packet the store sends it is dropped with probability `percent` % (nftables `numgen random`),
   * independently — what a lossy path does below TCP, which retransmits. Replaces any fault already
   * on the link; `heal()` removes it.
   */
  lose(link: Link, percent: number): void {
    this.heal(link);
    const table = `dibsfault${this.links.indexOf(link) + 1}`;
    const n = Math.round(percent);
    const script = [
      `add table inet ${table}`,
      `add chain inet ${table} input { type filter hook input priority 0 ; policy accept ; }`,
      `add chain inet ${table} output { type filter hook output priority 0 ; policy accept ; }`,
      `add rule inet ${table} input ip saddr ${link.addressB} numgen random mod 100 < ${n} counter drop`,
      `add rule inet ${table} output ip daddr ${link.addressB} numgen random mod 100 < ${n} counter drop`,
    ].join('\n');
    const result = spawnSync('ip', ['netns', 'exec', link.a.name, 'nft', '-f', '-'], {
      input: script,
      encoding: 'utf8',
    });
    if (result.status !== 0) throw new Error(`nft failed: ${result.stderr}`);
  }

  /** Packets dropped so far by `lose()` on `link` (both directions), read from the rules' counters. */
  dropped(link: Link): number {
    const table = `dibsfault${this.links.indexOf(link) + 1}`;
    const out = spawnSync('ip', ['netns', 'exec', link.a.name, 'nft', 'list', 'table', 'inet', table], {
      encoding: 'utf8',
    }).stdout;
    return [...(out ?? '').matchAll(/counter packets (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
  }

  heal(link: Link): void {
    spawnSync(
      'ip',
      ['netns', 'exec', link.a.name, 'nft', 'delete', 'table', 'inet', `dibsfault${this.links.indexOf(link) + 1}`],
      { encoding: 'utf8' },
    );
  }

  private teardownSync(): void {
    for (const child of this.children) child.kill('SIGKILL');
    for (const host of this.hosts.values()) spawnSync('ip', ['netns', 'del', host.name]);
    this.hosts.clear();
  }

  /** Kills what was started in the hosts and deletes the namespaces (their veths and rules go with them). */
  async teardown(): Promise<void> {
    const exits = [...this.children].map(
      (c) =>
        new Promise((resolve) =>
          c.exitCode !== null || c.signalCode !== null ? resolve(null) : c.once('exit', resolve),
        ),
    );
    for (const child of this.children) child.kill('SIGKILL');
    await Promise.race([Promise.all(exits), new Promise((resolve) => setTimeout(resolve, 5000))]);
    this.teardownSync();
    process.off('exit', this.onExit);
    for (const s of ['SIGINT', 'SIGTERM'] as const) process.off(s, this.onSignal);
  }
}
