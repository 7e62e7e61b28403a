/** `/v1/limits` over HTTP: typed errors, the wait bound, tenants apart. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { errorOf, openTestService, type TestService } from '../support/service.js';

describe('HTTP /v1/limits', () => {
  let svc: TestService;
  let acme: string;
  let globex: string;

  before(async () => {
    svc = await openTestService();
    acme = await svc.key('acme', ['locks:write', 'locks:read']);
    globex = await svc.key('globex', ['locks:write', 'locks:read']);
  });
  after(() => svc.close());

  it('bad input is 400 naming the field; an unknown limit is 404', async () => {
    assert.equal(
      errorOf(
        await svc.call(acme, 'POST', '/v1/limits', { name: 'x', algorithm: 'leaky', limit: 1, periodMs: 1000 }),
        400,
        'invalid_input',
      ).field,
      'algorithm',
    );
    assert.equal(
      errorOf(
        await svc.call(acme, 'POST', '/v1/limits', {
          name: 'x',
          algorithm: 'quota',
          limit: 1,
          periodMs: 1000,
          extra: 1,
        }),
        400,
        'invalid_input',
      ).field,
      'extra',
    );
    errorOf(await svc.call(acme, 'POST', '/v1/limits/nope/take', {}), 404, 'not_found');
    assert.equal(
      (await svc.call(acme, 'POST', '/v1/limits', { name: 'calls', algorithm: 'quota', limit: 2, periodMs: 3_600_000 }))
        .statusCode,
      201,
    );
    errorOf(
      await svc.call(acme, 'POST', '/v1/limits', { name: 'calls', algorithm: 'quota', limit: 2, periodMs: 3_600_000 }),
      409,
      'already_exists',
    );
    assert.equal(
      errorOf(await svc.call(acme, 'POST', '/v1/limits/calls/take', { n: 3 }), 400, 'invalid_input').field,
      'n',
    );
    assert.equal(
      errorOf(await svc.call(acme, 'POST', '/v1/limits/calls/wait', {}), 400, 'invalid_input').field,
      'waitMs',
    );
    assert.equal(
      errorOf(await svc.call(acme, 'POST', '/v1/limits/calls/wait', { waitMs: 3_600_000 }), 400, 'invalid_input').field,
      'waitMs',
    );
  });

  it("a wait that runs out is 429 rate_limited; tenants never see each other's limits", async () => {
    assert.equal((await svc.call(acme, 'POST', '/v1/limits/calls/take', { n: 2, key: 'k' })).json().allowed, true);
    errorOf(await svc.call(acme, 'POST', '/v1/limits/calls/wait', { key: 'k', waitMs: 50 }), 429, 'rate_limited');
    errorOf(await svc.call(globex, 'GET', '/v1/limits/calls'), 404, 'not_found');
    assert.deepEqual((await svc.call(globex, 'GET', '/v1/limits')).json(), { data: [] });
    assert.equal(
      (await svc.call(globex, 'POST', '/v1/limits', { name: 'calls', algorithm: 'quota', limit: 1, periodMs: 1000 }))
        .statusCode,
      201,
    );
    const mine = (await svc.call(acme, 'GET', '/v1/limits')).json() as { data: { name: string; limit: number }[] };
    assert.deepEqual(
      mine.data.map((d) => [d.name, d.limit]),
      [['calls', 2]],
      'names come back without the tenant prefix',
    );
  });
});
