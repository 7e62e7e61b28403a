// HTTP baselines for bench/http.ts: a bare Fastify route shaped like the claim route (same path,
// same JSON body parsed, 201 with JSON), with no auth, tenants, validation hooks, idempotency,
// logging or metrics. Without DIBS_STORE it answers a constant-sized claim-like object (the floor
// of any Node HTTP service on this machine); with DIBS_STORE (and DIBS_INDEX, the built library's
// index.js) the route calls dibs.pools.claim on that store, the least an HTTP wrapper of the
// library can do. With DIBS_KEY_HASH (the hex sha256 of an API key) as well, the route first
// checks that key the way the service must (Authorization: Bearer <key>, sha256, constant-time
// compare, 401 otherwise): the least a wrapper that may face the internet can do, so the fair
// baseline for `dibs serve`, whose auth is not optional. Plain JavaScript, run by node directly.
// Prints its URL to stderr.
import Fastify from 'fastify';
import { hash, timingSafeEqual } from 'node:crypto';
import { pathToFileURL } from 'node:url';

const dibs = process.env.DIBS_STORE
  ? await (await import(pathToFileURL(process.env.DIBS_INDEX).href)).openDibs(process.env.DIBS_STORE)
  : undefined;
// The hex digest's bytes, compared with the hex digest of the presented key: the cheapest way
// (crypto.hash's 'buffer' output costs twice its hex output), as the service does it.
const keyHash = process.env.DIBS_KEY_HASH ? Buffer.from(process.env.DIBS_KEY_HASH, 'latin1') : undefined;
const BEARER = /^Bearer\s+(\S+)\s*$/i;
/** The request's key is the one expected (a bearer token whose sha256 matches), in constant time. */
const keyed = (request) => {
  const bearer = BEARER.exec(request.headers.authorization ?? '');
  return bearer !== null && timingSafeEqual(keyHash, Buffer.from(hash('sha256', bearer[1]), 'latin1'));
};
const app = Fastify({ logger: false });
let n = 0;
app.post('/v1/pools/:pool/claims', async (request, reply) => {
  if (keyHash && !keyed(request)) return reply.code(401).send({ error: { code: 'unauthorized' } });
  reply.code(201);
  if (dibs) return dibs.pools.claim(request.params.pool, request.body.claimant);
  return {
    pool: request.params.pool,
    claimant: request.body.claimant,
    status: 'claimed',
    code: `DIBS-${n++}`,
    held: [],
    replayed: false,
  };
});
const url = await app.listen({ host: '127.0.0.1', port: 0 });
process.stderr.write(`bare fastify is serving ${url}\n`);
process.on(
  'SIGTERM',
  () =>
    void app
      .close()
      .then(() => dibs?.close())
      .then(() => process.exit(0)),
);
