/**
 * A userspace TCP relay that makes a link slow and unreliable, for kernels without `netem`. Run it
 * on the store host (`ip netns exec NS node --import tsx netns-relay.ts CONFIG`): it listens on
 * `listen` (all addresses of that host) and forwards each connection to `target` on the same host,
 * delaying every chunk in each direction by `delayMs` plus a random jitter up to `jitterMs`, and
 * with probability `stallP` per chunk freezing that direction for `stallMs` (what a lost segment
 * costs TCP: a retransmission timeout). Order within one connection is kept (TCP would); different
 * connections are delayed independently, so answers on different connections arrive reordered.
 * Prints "listening" once ready, and a stats line on SIGTERM.
 */
import net from 'node:net';

interface RelayConfig {
  listen: number;
  target: number;
  delayMs: number;
  jitterMs: number;
  stallP: number;
  stallMs: number;
}
const config = JSON.parse(process.argv[2]!) as RelayConfig;
const stats = { connections: 0, chunks: 0, stalls: 0 };

/**
 * Writes chunks to `to` no earlier than their release time and strictly in arrival order: one FIFO
 * per direction drained by one timer. (A timer per chunk is not enough: Node fires timers of
 * different durations that fall due in the same millisecond in no guaranteed order, which swapped
 * two replies on one Redis connection — the lock history checker caught it as two holders.)
 */
function pipeSlowly(from: net.Socket, to: net.Socket): void {
  const queue: Array<{ at: number; chunk: Buffer | null }> = [];
  let nextFree = 0;
  // biome-ignore lint/correctness/noUnusedVariables: read by `timer ??=` below (one drain timer at a time); Biome misses the read
  let timer: NodeJS.Timeout | undefined;
  const drain = () => {
    timer = undefined;
    while (queue.length > 0 && queue[0]!.at <= Date.now()) {
      const { chunk } = queue.shift()!;
      if (to.destroyed) continue;
      if (chunk === null) to.end();
      else to.write(chunk);
    }
    if (queue.length > 0) timer = setTimeout(drain, Math.max(1, queue[0]!.at - Date.now()));
  };
  const push = (chunk: Buffer | null, extra: number) => {
    const at = Math.max(nextFree, Date.now() + config.delayMs + Math.random() * config.jitterMs) + extra;
    nextFree = at;
    queue.push({ at, chunk });
    timer ??= setTimeout(drain, Math.max(1, queue[0]!.at - Date.now()));
  };
  from.on('data', (chunk: Buffer) => {
    stats.chunks++;
    const stall = Math.random() < config.stallP;
    if (stall) stats.stalls++;
    push(chunk, stall ? config.stallMs : 0);
  });
  from.on('end', () => push(null, 0));
}

const server = net.createServer((client) => {
  stats.connections++;
  const upstream = net.connect(config.target, '127.0.0.1');
  // let what is still delayed arrive before the other side is closed too
  const close = () =>
    setTimeout(
      () => {
        client.destroy();
        upstream.destroy();
      },
      config.delayMs + config.jitterMs + config.stallMs,
    );
  client.on('error', close).on('close', close);
  upstream.on('error', close).on('close', close);
  pipeSlowly(client, upstream);
  pipeSlowly(upstream, client);
});
server.listen(config.listen, '0.0.0.0', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => {
  process.stdout.write(`${JSON.stringify(stats)}\n`);
  process.exit(0);
});
