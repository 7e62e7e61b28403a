/**
 * A loopback TCP proxy between dibs and a store (PostgreSQL, Redis) that injects network faults on
 * command — the faults a real network and a real load balancer produce:
 * - `reset()`   every open connection is torn down with a TCP RST (a crashed peer, an LB reset);
 * - `stall(ms)` no byte moves either way for `ms` (a GC pause, a congested link), then traffic resumes;
 * - `holdReplies(ms)` requests still reach the store, its replies are held back for `ms` and then
 *   delivered in order (a reply stalled on its way back: the store acted, the client does not know yet);
 * - `blackhole(on)` bytes are swallowed and new connections hang (a dead route: no RST, no FIN) —
 *   the fault that turns a missing timeout into a request that never ends; with `{ closes: true }`
 *   a side that closes is not told to the other either (a one-sided partition: the client gives up
 *   and drops its socket, the server never hears of it) until the black hole ends, when the
 *   dangling sides are reset as the peer's kernel would answer them;
 * - `refuse(on)` new connections are reset at once (the store is "down");
 * - `delayMs` (option) every chunk is held this long before it is passed on, each way: a
 *   cross-zone link. Bytes still in flight when the relay is reset, black-holed or closed are
 *   dropped, as a cut link drops them (what makes a failover test able to lose writes).
 * Test code only; listens on 127.0.0.1 only.
 */
import net from 'node:net';

export interface FaultProxy {
  /** host:port of the proxy, to put into a store URL in place of the real server's. */
  readonly host: string;
  readonly port: number;
  readonly stats: { connections: number; resets: number; stalls: number; heldReplies: number };
  reset(): void;
  stall(ms: number): Promise<void>;
  holdReplies(ms: number): Promise<void>;
  blackhole(on: boolean, options?: { closes?: boolean }): void;
  refuse(on: boolean): void;
  close(): Promise<void>;
}

export async function startFaultProxy(
  target: { host: string; port: number },
  options: { delayMs?: number } = {},
): Promise<FaultProxy> {
  const delayMs = options.delayMs ?? 0;
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket; held: Buffer[] }>();
  let paused = false;
  let holding = false;
  let holed = false;
  let holedCloses = false;
  /** Sides whose peer closed during a black hole that swallows closes. */
  const dangling = new Set<net.Socket>();
  let refusing = false;
  const stats = { connections: 0, resets: 0, stalls: 0, heldReplies: 0 };

  const server = net.createServer((client) => {
    if (refusing) {
      client.resetAndDestroy();
      return;
    }
    stats.connections++;
    const upstream = net.connect(target.port, target.host);
    const pair = { client, upstream, held: [] as Buffer[] };
    pairs.add(pair);
    const forward = (from: net.Socket, to: net.Socket, replies: boolean) =>
      from.on('data', (chunk: Buffer) => {
        if (holed) return; // swallowed: the peer never hears of it
        if (replies && holding) {
          pair.held.push(chunk);
          return;
        }
        if (delayMs === 0) {
          if (!to.write(chunk)) from.pause();
          return;
        }
        // Timers of equal delay fire in the order they were set: the byte stream stays in order.
        setTimeout(() => {
          if (!holed && !to.destroyed && pairs.has(pair)) to.write(chunk);
        }, delayMs);
      });
    forward(client, upstream, false);
    forward(upstream, client, true);
    client.on('drain', () => upstream.resume());
    upstream.on('drain', () => client.resume());
    if (paused) {
      client.pause();
      upstream.pause();
    }
    const end = (closed: net.Socket, other: net.Socket) => () => {
      pairs.delete(pair);
      closed.destroy();
      if (holed && holedCloses && !other.destroyed) {
        dangling.add(other);
        other.once('close', () => dangling.delete(other));
        return;
      }
      other.destroy();
    };
    client.on('close', end(client, upstream)).on('error', end(client, upstream));
    upstream.on('close', end(upstream, client)).on('error', end(upstream, client));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;

  return {
    host: '127.0.0.1',
    port,
    stats,
    reset() {
      stats.resets++;
      for (const { client, upstream } of [...pairs]) {
        client.resetAndDestroy();
        upstream.resetAndDestroy();
      }
      pairs.clear();
    },
    async stall(ms: number) {
      stats.stalls++;
      paused = true;
      for (const { client, upstream } of pairs) {
        client.pause();
        upstream.pause();
      }
      await new Promise((r) => setTimeout(r, ms));
      paused = false;
      for (const { client, upstream } of pairs) {
        client.resume();
        upstream.resume();
      }
    },
    async holdReplies(ms: number) {
      stats.heldReplies++;
      holding = true;
      await new Promise((r) => setTimeout(r, ms));
      holding = false;
      for (const pair of pairs) for (const chunk of pair.held.splice(0)) pair.client.write(chunk);
    },
    blackhole(on: boolean, options: { closes?: boolean } = {}) {
      holed = on;
      holedCloses = on && options.closes === true;
      if (!on) {
        for (const socket of [...dangling]) socket.resetAndDestroy();
        dangling.clear();
      }
    },
    refuse(on: boolean) {
      refusing = on;
    },
    async close() {
      for (const socket of dangling) socket.destroy();
      dangling.clear();
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
