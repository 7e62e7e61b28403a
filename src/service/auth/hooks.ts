/** The auth hook: every route declares a scope (routing.ts); this enforces it before parsing the body. */
import type { FastifyInstance } from 'fastify';
import { DibsError } from '../../core/errors.js';
import { DEFAULT_TENANT, grants, presentedKey, type KeyVerifier, type Scope } from './keys.js';
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

  app.addHook('onRequest', async (request, reply) => {
    request.tenant = anonymous;
    const doc = request.routeOptions.config.doc;
    // A /v1 route registered without a declaration (routing.ts) is not tenant-aware: deny by
    // default — only an admin key of the default tenant may use it — instead of leaving it open.
    const undeclared = !doc && request.routeOptions.url?.startsWith('/v1/') === true;
    if (!undeclared && (!doc || doc.scope === 'public')) return;
    const scope = doc ? doc.scope : 'admin';
    const key = presentedKey(request.headers);
    if (!key) {
      void reply.header('www-authenticate', 'Bearer realm="dibs"');
      throw new DibsError('unauthorized', 'an API key is required: send "Authorization: Bearer dibs_…" (create one with `dibs keys create`)');
    }
    try {
      request.principal = await verifier.verify(key);
    } catch (error) {
      void reply.header('www-authenticate', 'Bearer realm="dibs", error="invalid_token"');
      throw error;
    }
    if (scope !== 'any' && !grants(request.principal.scopes, scope as Scope)) {
      throw new DibsError('forbidden', `this API key lacks the scope '${scope}'`, { details: { needed: scope } });
    }
    if (undeclared && request.principal.tenant !== DEFAULT_TENANT) throw new DibsError('not_found', `no route ${request.method} ${request.url.split('?')[0]} for this tenant`);
    request.tenant = tenantOf(request.principal.tenant);
  });
}
