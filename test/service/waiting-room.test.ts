/** The waiting room over HTTP: enable, join, check a ticket (header), reserve, and the SSE stream. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../src/service/app.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { openTempSqlite } from '../support/sqlite.js';

describe('HTTP: waiting rooms', () => {
  let env: Awaited<ReturnType<typeof openTempSqlite>>;
  let app: FastifyInstance;
  let base: string;
  let auth: string;
  let other: string;
  before(async () => {
    env = await openTempSqlite();
    app = buildServer({ dibs: env.dibs, rateLimit: false });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    const key = async (tenant: string) =>
      `Bearer ${(await createApiKey(env.dibs.backend.service, { tenant, name: tenant, scopes: ['sales:admin'] })).key}`;
    auth = await key('shop');
    other = await key('rival');
  });
  after(async () => {
    await app.close();
    await env.cleanup();
  });

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: auth,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    // biome-ignore lint/suspicious/noExplicitAny: response bodies are read field by field by the assertions below
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };

  it('joins, refuses plain reservations, reserves with an admitted ticket, streams a waiting ticket to sold_out', async () => {
    const sale = (
      await call('POST', '/v1/sales', {
        sku: 'HTTP-WR',
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        cap: 1,
        perCustomerLimit: 1,
      })
    ).body;
    const room = await call('PUT', `/v1/sales/${sale.id}/waiting-room`, { admitPerSecond: 100, windowMs: 60_000 });
    assert.equal(room.status, 200);
    assert.equal(room.body.admitPerSecond, 100);

    const a = await call('POST', `/v1/sales/${sale.id}/waiting-room/tickets`, { customer: 'ann' });
    const b = await call('POST', `/v1/sales/${sale.id}/waiting-room/tickets`, { customer: 'bob' });
    assert.equal(a.status, 201);
    assert.equal(a.body.status, 'admitted');
    assert.equal(b.body.status, 'waiting');

    const plain = await call('POST', `/v1/sales/${sale.id}/reservations`, { customer: 'ann', ttlMs: 60_000 });
    assert.equal(plain.status, 403);
    assert.equal(plain.body.error.code, 'ticket_required');
    const missing = await call('GET', `/v1/sales/${sale.id}/waiting-room/tickets/bob`);
    assert.equal(missing.status, 400);
    const stolen = await call('GET', `/v1/sales/${sale.id}/waiting-room/tickets/bob`, undefined, {
      'dibs-ticket': a.body.token,
    });
    assert.equal(stolen.status, 403);
    assert.equal(stolen.body.error.code, 'invalid_ticket');
    const early = await call(
      'POST',
      `/v1/sales/${sale.id}/waiting-room/reservations`,
      { customer: 'bob', ttlMs: 60_000 },
      { 'dibs-ticket': b.body.token },
    );
    assert.equal(early.status, 409);
    assert.equal(early.body.error.code, 'not_admitted');

    // bob listens while ann buys the last unit: the stream tells him sold_out and ends
    // another tenant does not see the room at all
    const foreign = await call('GET', `/v1/sales/${sale.id}/waiting-room`, undefined, { authorization: other });
    assert.equal(foreign.status, 404);
    assert.equal(room.body.saleId, sale.id, 'names come back without the tenant namespace');

    const stream = fetch(
      `${base}/v1/sales/${sale.id}/waiting-room/tickets/bob/events?ticket=${encodeURIComponent(b.body.token)}`,
      { headers: { authorization: auth } },
    ).then(async (res) => {
      assert.equal(res.headers.get('content-type'), 'text/event-stream');
      return res.text();
    });
    const hold = await call(
      'POST',
      `/v1/sales/${sale.id}/waiting-room/reservations`,
      { customer: 'ann', ttlMs: 60_000 },
      { 'dibs-ticket': a.body.token },
    );
    assert.equal(hold.status, 201);
    assert.equal((await call('POST', `/v1/reservations/${hold.body.hold.id}/confirm`)).status, 201);
    const events = (await stream)
      .split('\n\n')
      .filter(Boolean)
      .map(
        (e) =>
          JSON.parse(
            e
              .split('\n')
              .find((l) => l.startsWith('data: '))!
              .slice(6),
          ) as { status: string; token?: string; saleId: string },
      );
    assert.ok(
      events.every((e) => e.saleId === sale.id),
      'the stream strips the tenant namespace too',
    );
    assert.equal(events[0]!.status, 'waiting');
    assert.equal(events.at(-1)!.status, 'sold_out');
    assert.ok(
      events.every((e) => e.token === undefined),
      'the stream never echoes the token',
    );
  });
});
