/**
 * A loopback HTTP proxy in front of the real service that misbehaves on command, one scripted
 * action per incoming request (then it passes everything through):
 * - `pass`         forwarded, the answer relayed;
 * - `drop-answer`  forwarded (the service acts), then the client's connection is destroyed before
 *                  any answer byte: the classic lost answer of a retried write;
 * - `{status, retryAfter?}` answered by the proxy itself (a 503 of a draining instance, a 429);
 * - `stall`        never answered (until the client gives up).
 * Every request is recorded with its arrival time and Idempotency-Key.
 */
import http from 'node:http';

export type ProxyAction = 'pass' | 'drop-answer' | 'stall' | { status: number; retryAfter?: string; code?: string };

export interface HttpFaultProxy {
  readonly baseUrl: string;
  readonly seen: Array<{ at: number; method: string; url: string; idempotencyKey: string | undefined }>;
  script(...actions: ProxyAction[]): void;
  close(): Promise<void>;
}

export async function startHttpFaultProxy(target: string): Promise<HttpFaultProxy> {
  const upstream = new URL(target);
  const queue: ProxyAction[] = [];
  const seen: HttpFaultProxy['seen'] = [];
  const stalled = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    const key = req.headers['idempotency-key'];
    seen.push({
      at: Date.now(),
      method: req.method!,
      url: req.url!,
      idempotencyKey: Array.isArray(key) ? key[0] : key,
    });
    const action = queue.shift() ?? 'pass';
    if (action === 'stall') {
      stalled.add(res);
      req.resume();
      return;
    }
    if (typeof action === 'object') {
      req.resume();
      res.writeHead(action.status, {
        'content-type': 'application/json',
        ...(action.retryAfter ? { 'retry-after': action.retryAfter } : {}),
      });
      res.end(
        JSON.stringify({
          error: {
            code: action.code ?? (action.status === 429 ? 'rate_limited' : 'unavailable'),
            message: 'injected by the test proxy',
          },
        }),
      );
      return;
    }
    const forward = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        if (action === 'drop-answer') {
          answer.resume();
          answer.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => req.socket.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    seen,
    script: (...actions) => queue.push(...actions),
    close: async () => {
      for (const res of stalled) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
