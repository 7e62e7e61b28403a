/**
 * `dibs serve --store postgres://…` as a real process: flash sales over HTTP, and the background
 * jobs (activation, outbox delivery) running against PostgreSQL — a wishlister's notification and
 * the sale.live event arrive at local receivers. Then a graceful SIGTERM.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { CLI_ARGS, ROOT } from '../support/cli.js';
import { requirePostgres, tempPgStore } from '../support/postgres.js';
import { httpReceiver } from '../support/receivers.js';

/** The fields of the answers this test reads. */
interface Answer {
  status?: string;
  stats?: unknown;
  violations?: unknown[];
  order: { id: string };
  hold: { id: string };
  error: { code: string };
}

const skip = await requirePostgres();

describe('dibs serve on PostgreSQL', { skip }, () => {
  const temp = tempPgStore({ poolSize: '4' });
  after(() => temp.drop());

  it('sells over HTTP and runs the sale jobs and outbox delivery', async () => {
    const receiver = await httpReceiver(() => 200);
    const child = spawn(process.execPath, [...CLI_ARGS, 'serve', '--port', '0', '--demo', '--store', temp.store], {
      cwd: ROOT,
      env: {
        ...process.env,
        LOG_LEVEL: 'warn',
        DIBS_JOBS_EVERY_MS: '100',
        DIBS_WEBHOOK_SECRET: 'whsec_pg',
        DIBS_WEBHOOK_URLS: receiver.url('/ops'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    try {
      let stderr = '';
      // --demo prints the URL and a fresh admin key of the default tenant
      const { url, key } = await new Promise<{ url: string; key: string }>((resolve, reject) => {
        child.stderr.on('data', (d) => {
          stderr += d;
          const url = /dibs is serving (http:\/\/\S+)/.exec(stderr);
          const key = /\b(dibs_[0-9a-f]+_[A-Za-z0-9_-]+)/.exec(stderr);
          if (url && key) resolve({ url: url[1]!, key: key[1]! });
        });
        void exited.then(() => reject(new Error(`server exited early:\n${stderr}`)));
      });
      const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
        const res = await fetch(`${url}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${key}`,
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
            ...headers,
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
        const text = await res.text();
        return { status: res.status, headers: res.headers, json: (text ? JSON.parse(text) : null) as Answer };
      };

      assert.equal((await call('GET', '/v1/sales/demo')).status, 200, 'the demo sale was created on PostgreSQL');
      assert.equal(
        (await call('POST', '/v1/wishlist', { sku: 'PG-TV', customer: 'ann', webhook: receiver.url('/ann') })).status,
        201,
      );
      const created = await call('POST', '/v1/sales', {
        id: 'pg-tv',
        sku: 'PG-TV',
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        cap: 2,
        perCustomerLimit: 1,
      });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      assert.equal(created.json.status, 'live');

      const buy = await call('POST', '/v1/sales/pg-tv/claims', { customer: 'bob' }, { 'idempotency-key': 'bob-1' });
      assert.equal(buy.status, 201);
      const replay = await call('POST', '/v1/sales/pg-tv/claims', { customer: 'bob' }, { 'idempotency-key': 'bob-1' });
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');
      assert.equal(replay.json.order.id, buy.json.order.id);
      assert.equal(
        (await call('POST', '/v1/sales/pg-tv/claims', { customer: 'bob' })).json.error.code,
        'limit_reached',
      );
      const hold = await call('POST', '/v1/sales/pg-tv/reservations', { customer: 'cat', ttlMs: 60_000 });
      assert.equal(hold.status, 201);
      const dave = await call('POST', '/v1/sales/pg-tv/claims', { customer: 'dave' });
      assert.equal(dave.status, 409);
      assert.equal(dave.json.error.code, 'sold_out', 'the hold counts against the cap');
      assert.equal((await call('POST', `/v1/reservations/${hold.json.hold.id}/confirm`)).status, 201);
      const sale = await call('GET', '/v1/sales/pg-tv');
      assert.equal(sale.json.status, 'sold_out');
      assert.deepEqual(sale.json.stats, { sold: 2, held: 0, available: 0 });
      assert.deepEqual((await call('GET', '/v1/sales/pg-tv/audit')).json, { violations: [] });

      // The jobs announce the sale and the dispatcher delivers from the PostgreSQL outbox.
      const types = (path: string) =>
        receiver.received
          .filter((r) => r.path === path)
          .map((r) => (JSON.parse(r.body.toString()) as { type: string }).type);
      for (
        const deadline = Date.now() + 30_000;
        Date.now() < deadline &&
        !(types('/ann').includes('sale.live.notify') && types('/ops').includes('sale.sold_out'));
      )
        await sleep(50);
      assert.deepEqual(types('/ann'), ['sale.live.notify'], 'the wishlister was notified once');
      assert.ok(types('/ops').includes('sale.live'), 'sale.live reached the operations endpoint');
      assert.ok(types('/ops').includes('sale.sold_out'), 'sale.sold_out reached the operations endpoint');

      child.kill('SIGTERM');
      assert.equal(await exited, 0, 'exit code 0 after SIGTERM');
    } finally {
      clearTimeout(killer);
      if (child.exitCode === null) child.kill('SIGKILL');
      await receiver.close();
    }
  });
});
