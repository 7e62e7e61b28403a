/** The auth hook: every route declares a scope (routing.ts); this enforces it before parsing the body. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DibsError } from '../../core/errors.js';
import { DEFAULT_TENANT, grants, presentedKey, type KeyVerifier, type Principal, type Scope } from './keys.js';
import { Tenant } from './tenant.js';

export function registerAuth(app: FastifyInstance, verifier: KeyVerifier): void {
  const tenants = new Map<string, Tenant>();
  const tenantOf = (id: string) => {
    let tenant = tenants.get(id);
    if (!tenant) tenants.set(id, (tenant = new Tenant(id)));
    return tenant;
  };
  const anonymous = tenantOf(DEFAULT_TENANT);
  app.decorateRequest('principal', null);
  app.decorateRequest('tenant', null as never);

  /** After the key is verified: the scope check and the tenant. An error to answer, or undefined. */
  const admit = (
    request: FastifyRequest,
    principal: Principal,
    scope: string,
    undeclared: boolean,
  ): Error | undefined => {
    request.principal = principal;
    if (scope !== 'any' && !grants(principal.scopes, scope as Scope)) {
      return new DibsError('forbidden', `this API key lacks the scope '${scope}'`, { details: { needed: scope } });
    }
    if (undeclared && principal.tenant !== DEFAULT_TENANT)
      return new DibsError('not_found', `no route ${request.method} ${request.url.split('?')[0]} for this tenant`);
    request.tenant = tenantOf(principal.tenant);
    return undefined;
  };
  const invalidToken = (reply: FastifyReply, error: unknown): Error => {
    void reply.header('www-authenticate', 'Bearer realm="dibs", error="invalid_token"');
    return error as Error;
  };

  // Callback-style: a key verified from the cache (every request but one per key per cache
  // period) is checked synchronously, without a promise per request.
  app.addHook('onRequest', (request, reply, done) => {
    request.tenant = anonymous;
    const doc = request.routeOptions.config.doc;
    // A /v1 route registered without a declaration (routing.ts) is not tenant-aware: deny by
    // default — only an admin key of the default tenant may use it — instead of leaving it open.
    const undeclared = !doc && request.routeOptions.url?.startsWith('/v1/') === true;
    if (!undeclared && (!doc || doc.scope === 'public')) return done();
    const scope = doc ? doc.scope : 'admin';
    let key: string | undefined;
    try {
      key = presentedKey(request.headers);
    } catch (error) {
      return done(error as Error);
    }
    if (!key) {
      void reply.header('www-authenticate', 'Bearer realm="dibs"');
      return done(
        new DibsError(
          'unauthorized',
          'an API key is required: send "Authorization: Bearer dibs_…" (create one with `dibs keys create`)',
        ),
      );
    }
    let principal: Principal | undefined;
    try {
      principal = verifier.verifyCached(key);
    } catch (error) {
      return done(invalidToken(reply, error));
    }
    if (principal) return done(admit(request, principal, scope, undeclared));
    verifier.verify(key).then(
      (verified) => done(admit(request, verified, scope, undeclared)),
      (error: unknown) => done(invalidToken(reply, error)),
    );
  });
}
