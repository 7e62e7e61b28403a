/** POST /v1/pools/:pool/generate: codes in, infeasible requests refused with the error shape, scopes and tenants. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { errorOf, openTestService, type TestService } from '../support/service.js';

describe('HTTP: code generation', () => {
  let svc: TestService;
  before(async () => {
    svc = await openTestService();
  });
  after(() => svc.close());

  it('generates into a pool and refuses what the pattern cannot hold', async () => {
    const admin = await svc.key('acme', ['pools:admin']);
    assert.equal((await svc.call(admin, 'POST', '/v1/pools', { name: 'gen-http' })).statusCode, 201);
    const ok = await svc.call(admin, 'POST', '/v1/pools/gen-http/generate', {
      count: 300,
      pattern: 'GIFT-#####',
      checkChar: true,
    });
    assert.equal(ok.statusCode, 201, ok.body);
    assert.equal(ok.json().generated, 300);
    assert.equal(
      errorOf(
        await svc.call(admin, 'POST', '/v1/pools/gen-http/generate', { count: 60, length: 2, charset: 'numeric' }),
        400,
        'invalid_input',
      ).field,
      'count',
    );
    assert.equal(
      errorOf(
        await svc.call(admin, 'POST', '/v1/pools/gen-http/generate', { count: 10, length: 4, pattern: '##' }),
        400,
        'invalid_input',
      ).field,
      'pattern',
    );
    // a reader may not generate; another tenant does not see the pool
    errorOf(
      await svc.call(await svc.key('acme', ['pools:read']), 'POST', '/v1/pools/gen-http/generate', {
        count: 1,
        length: 8,
      }),
      403,
    );
    errorOf(
      await svc.call(await svc.key('other', ['pools:admin']), 'POST', '/v1/pools/gen-http/generate', {
        count: 1,
        length: 8,
      }),
      404,
      'not_found',
    );
  });
});
