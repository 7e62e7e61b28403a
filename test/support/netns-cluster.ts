/**
 * A 3-master Redis Cluster on the store host of test/support/netns.ts. Its nodes announce
 * 127.0.0.1:<port>, which every host resolves its own way: the nodes (all on the store host) reach
 * each other directly; each worker host runs netns-forward.ts, forwarding those ports over its own
 * link to the store host (so that link's cuts apply to everything it sends); the test process, which
 * stays outside the namespaces, reaches each node through a relay to the node's Unix socket. The
 * ports are picked free outside (and below 55536: a node's cluster bus is its port + 10000).
 * `stop()` ends the forwarders, relays and nodes; the namespace teardown would too.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Host, Link } from './netns.js';
import { startRedisOn, unixRelay, type HostRedis } from './netns-stores.js';
import { freePort } from './redis.js';
import { workerArgs } from './node-worker.js';

const FORWARD = fileURLToPath(new URL('./netns-forward.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface HostCluster {
  url: string;
  ports: number[];
  nodes: HostRedis[];
  /** Until every node says cluster_state:ok (bounded at 60 s, only to catch a cluster that never is). */
  waitOk(): Promise<void>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /**
   * Called once the nodes are up: the ports on the store host that the worker hosts' forwarders
   * should reach instead of the nodes' own (parallel to `ports`) — e.g. slow relays it starts.
   */
  upstream?(ports: number[]): Promise<number[]>;
}

export async function startClusterOn(store: Host, links: Link[], options: ClusterOptions = {}): Promise<HostCluster> {
  const ports: number[] = [];
  while (ports.length < 3) {
    const port = await freePort();
    if (port < 55_000 && !ports.includes(port)) ports.push(port);
  }
  const nodes: HostRedis[] = [];
  const relays: Array<{ close(): Promise<void> }> = [];
  const forwarders: ChildProcess[] = [];
  const inStore = (...args: string[]) =>
    spawnSync('ip', ['netns', 'exec', store.name, 'redis-cli', ...args], { encoding: 'utf8', timeout: 30_000 });
  const waitOk = async () => {
    for (const deadline = Date.now() + 60_000; ; await sleep(100)) {
      const states = ports.map(
        (p) => /cluster_state:(\w+)/.exec(inStore('-p', String(p), 'cluster', 'info').stdout)?.[1],
      );
      if (states.every((state) => state === 'ok')) return;
      if (Date.now() > deadline)
        throw new Error(`the cluster on the store host did not reach cluster_state:ok (${states.join(', ')})`);
    }
  };
  const stop = async () => {
    for (const f of forwarders) f.kill('SIGKILL');
    await Promise.all(relays.map((r) => r.close()));
    await Promise.all(nodes.map((n) => n.stop()));
  };
  try {
    for (const port of ports) {
      nodes.push(
        await startRedisOn(store, [
          '--port',
          String(port),
          '--cluster-enabled',
          'yes',
          '--cluster-announce-ip',
          '127.0.0.1',
          '--cluster-node-timeout',
          '5000',
        ]),
      );
    }
    const created = inStore('--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-yes');
    if (created.status !== 0)
      throw new Error(`redis-cli --cluster create failed: ${created.stdout}\n${created.stderr}`);
    await waitOk();
    for (const [i, node] of nodes.entries()) relays.push(await unixRelay(node.socket, ports[i]));
    const to = await options.upstream?.(ports);
    for (const link of links) {
      const child = link.b.spawn(
        process.execPath,
        [...workerArgs(FORWARD), JSON.stringify({ host: link.addressA, ports, ...(to ? { to } : {}) })],
        { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      forwarders.push(child);
      await new Promise<void>((resolve, reject) => {
        let err = '';
        child.stderr!.on('data', (d) => (err += d));
        child.stdout!.on('data', (d) => String(d).includes('listening') && resolve());
        child.once('exit', (code) => reject(new Error(`forwarder on ${link.b.name} exited (${code}): ${err}`)));
      });
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `redis+cluster://${ports.map((p) => `127.0.0.1:${p}`).join(',')}`, ports, nodes, waitOk, stop };
}
