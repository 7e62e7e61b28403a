/**
 * Real local receivers for notification tests: an HTTP endpoint (webhooks, push service) and
 * an SMTP server, both on 127.0.0.1 with an ephemeral port, closed by `close()`.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** The self-signed loopback certificate (test/fixtures) for HTTPS receivers. */
export const LOOPBACK_TLS = {
  cert: readFileSync(new URL('../fixtures/loopback-cert.pem', import.meta.url)),
  key: readFileSync(new URL('../fixtures/loopback-key.pem', import.meta.url)),
};

/**
 * An HTTP(S) receiver; `respond` decides each status (e.g. fail the first attempts).
 * With `tls: true` it serves HTTPS with LOOPBACK_TLS (trust it with `ca: LOOPBACK_TLS.cert`).
 */
export async function httpReceiver(
  respond: (request: Received, index: number) => number = () => 200,
  options: { tls?: boolean } = {},
) {
  const received: Received[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request = { path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks) };
      received.push(request);
      res.statusCode = respond(request, received.length - 1);
      res.end();
    });
  };
  const server = options.tls ? createHttpsServer(LOOPBACK_TLS, handler) : createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (path = '/hook') => `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}${path}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export interface Mail {
  from: string;
  to: string[];
  raw: string;
}

export async function smtpReceiver() {
  const mails: Mail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      let raw = '';
      stream.on('data', (c: Buffer) => (raw += c.toString('utf8')));
      stream.on('end', () => {
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
