/**
 * A loopback TCP relay that delays every byte by a fixed time each way — a replication link
 * between zones (about 20 ms one way), where a loopback link would deliver a primary's last WAL
 * before its process is even gone. `cut()` ends the link at once: bytes still in flight are
 * dropped, open connections are reset and new ones refused (the primary's zone falls off the
 * network at the instant its server dies). Test code only; listens on 127.0.0.1 only.
 */
import net from 'node:net';

export interface DelayRelay {
  readonly host: string;
  readonly port: number;
  readonly stats: { connections: number; bytes: number; dropped: number };
  cut(): void;
  close(): Promise<void>;
}

export async function startDelayRelay(target: { host: string; port: number }, delayMs: number): Promise<DelayRelay> {
  const sockets = new Set<net.Socket>();
  let cut = false;
  const stats = { connections: 0, bytes: 0, dropped: 0 };
  const server = net.createServer((client) => {
    if (cut) return void client.resetAndDestroy();
    stats.connections++;
    const upstream = net.connect(target.port, target.host);
    sockets.add(client).add(upstream);
    // Same-duration timers fire in the order they were set, so the byte order is kept. A close is
    // delayed like the data before it (FIN travels the same link).
    const forward = (from: net.Socket, to: net.Socket) => {
      from.on('data', (chunk) => {
        setTimeout(() => {
          if (cut || to.destroyed) return void (stats.dropped += chunk.length);
          stats.bytes += chunk.length;
          to.write(chunk);
        }, delayMs);
      });
      from.on('close', () => setTimeout(() => to.destroy(), delayMs));
      from.on('error', () => {});
    };
    forward(client, upstream);
    forward(upstream, client);
    client.on('close', () => sockets.delete(client));
    upstream.on('close', () => sockets.delete(upstream));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    host: '127.0.0.1',
    port,
    stats,
    cut() {
      cut = true;
      for (const socket of sockets) socket.resetAndDestroy();
      sockets.clear();
    },
    async close() {
      cut = true;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
