/**
 * A plain TCP forwarder run on a worker host (`ip netns exec NS node --import tsx netns-forward.ts
 * CONFIG`): for each port it listens on that host's 127.0.0.1 and forwards every connection to the
 * same port on `host` (the store host's address on this worker's link). It lets a Redis Cluster
 * that announces 127.0.0.1:<port> for its nodes be reached the same way from every host: inside
 * the store host directly, from a worker host through this forwarder over its own link (so that
 * link's faults apply), from the test process through Unix-socket relays. Prints "listening" once
 * every port is open.
 */
import net from 'node:net';

// `to` (optional, parallel to `ports`): forward to these ports instead (e.g. a slow relay's on the store host)
const { host, ports, to } = JSON.parse(process.argv[2]!) as { host: string; ports: number[]; to?: number[] };
let open = 0;
for (const [i, port] of ports.entries()) {
  const server = net.createServer((client) => {
    const upstream = net.connect(to?.[i] ?? port, host);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
    client.pipe(upstream).pipe(client);
  });
  server.listen(port, '127.0.0.1', () => {
    if (++open === ports.length) process.stdout.write('listening\n');
  });
}
process.on('SIGTERM', () => process.exit(0));
