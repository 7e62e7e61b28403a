/**
 * The admin dashboard at `/` (static files from src/dashboard/public, read once at start) and the
 * few read endpoints it needs that the API did not have: a pool's claim rate over time (sampled in
 * memory, see dashboard/claim-rate.ts), the outbox's status and an event's delivery attempts.
 *
 * The page talks to the API like any client (with `Authorization: Bearer <key>`); it is served
 * without a key because it holds no data. Its Content-Security-Policy allows this origin only, so
 * the page cannot reach any other host.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { readFileSync } from 'node:fs';
import { DibsError } from '../../core/errors.js';
import { ClaimRateSampler, type ClaimRateOptions } from '../../dashboard/claim-rate.js';
import type { ServiceContext } from '../context.js';
import * as S from '../api-schemas.js';
import { route } from '../routing.js';

const PUBLIC = new URL('../../dashboard/public/', import.meta.url);
/** Every file the page may load: a fixed list, so no request path ever reaches the file system. */
const ASSETS: Record<string, string> = {
  'dashboard.js': 'text/javascript; charset=utf-8',
  'dashboard.css': 'text/css; charset=utf-8',
  'chart.js': 'text/javascript; charset=utf-8',
  'lib.js': 'text/javascript; charset=utf-8',
  'sale-page.js': 'text/javascript; charset=utf-8',
  'pool-page.js': 'text/javascript; charset=utf-8',
  'keys-page.js': 'text/javascript; charset=utf-8',
  'deliveries-page.js': 'text/javascript; charset=utf-8',
  'limits-panel.js': 'text/javascript; charset=utf-8',
};
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'";

function secure(reply: FastifyReply, type: string): FastifyReply {
  return reply
    .type(type)
    .header('content-security-policy', CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cache-control', 'no-cache');
}

/** Dead letters listed at most (newest dead first). */
const DEAD_LETTERS = 100;

export function dashboardRoutes(
  app: FastifyInstance,
  { dibs, deliveryStats }: ServiceContext,
  options: ClaimRateOptions = {},
): void {
  const page = readFileSync(new URL('index.html', PUBLIC), 'utf8');
  const assets = new Map(
    Object.entries(ASSETS).map(([name, type]) => [name, { type, body: readFileSync(new URL(name, PUBLIC), 'utf8') }]),
  );
  const sampler = new ClaimRateSampler(dibs, options);
  app.addHook('onClose', async () => sampler.stop());
  const tag = 'Dashboard';

  // the page and its files hold no data: public; every API call the page makes carries the key
  route(
    app,
    {
      method: 'GET',
      url: '/',
      scope: 'public',
      noRateLimit: true,
      tag,
      summary: 'The admin dashboard',
      responses: { 200: { description: 'HTML', contentType: 'text/html' } },
    },
    async (_request, reply) => secure(reply, 'text/html; charset=utf-8').send(page),
  );
  route(
    app,
    {
      method: 'GET',
      url: '/dashboard/:file',
      scope: 'public',
      noRateLimit: true,
      tag,
      summary: 'A file of the dashboard (fixed list)',
      responses: { 200: { description: 'JS or CSS' } },
    },
    async (request, reply) => {
      const asset = assets.get(request.params.file!);
      if (!asset) throw new DibsError('not_found', `no dashboard file '${request.params.file}'`);
      return secure(reply, asset.type).send(asset.body);
    },
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/pools/:pool/claim-rate',
      scope: 'pools:read',
      tag,
      summary: "A pool's claim rate over time (sampled in memory by this service instance)",
      responses: { 200: { description: 'The series', schema: S.claimRateSchema } },
    },
    async (request) => sampler.series(request.tenant.pool(request.params.pool)),
  );

  // The outbox is shared by every tenant: its status and delivery logs (any tenant's events and
  // receivers) are for the operator — admin keys of the default tenant. Another tenant's admin
  // key gets 404, as for any object that is not its own.
  const operatorOnly = (request: FastifyRequest) => {
    if (request.tenant.prefix !== '')
      throw new DibsError('not_found', `no route ${request.method} ${request.url.split('?')[0]} for this tenant`);
  };
  route(
    app,
    {
      method: 'GET',
      url: '/v1/outbox',
      scope: 'admin',
      tag,
      summary: 'Outbox status: pending, delivered, dead, lag (operator: admin keys of the default tenant)',
      responses: { 200: { description: 'The status', schema: S.outboxStatusSchema } },
    },
    async (request) => {
      operatorOnly(request);
      return dibs.backend.outbox.status();
    },
  );
  route(
    app,
    {
      method: 'GET',
      url: '/v1/events/:id/deliveries',
      scope: 'admin',
      tag,
      summary: "An event's delivery attempts (operator: admin keys of the default tenant)",
      responses: { 200: { description: 'The attempts', schema: S.deliveriesSchema } },
    },
    async (request) => {
      operatorOnly(request);
      return { event: request.params.id, data: await dibs.backend.outbox.deliveries(request.params.id!) };
    },
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/outbox/endpoints',
      scope: 'admin',
      tag,
      summary:
        "Each delivery endpoint's successes and failures, counted by this instance's dispatcher since it started (operator)",
      responses: { 200: { description: 'Per-endpoint counts', schema: S.endpointStatsSchema } },
    },
    async (request) => {
      operatorOnly(request);
      if (!dibs.backend.outbox) throw new DibsError('unsupported', `the ${dibs.kind} store has no outbox`);
      return {
        dispatcher: deliveryStats !== undefined,
        since: deliveryStats?.since ?? null,
        data: (deliveryStats?.list() ?? []).map((e) => ({
          ...e,
          successRate: e.ok + e.failed === 0 ? null : e.ok / (e.ok + e.failed),
        })),
      };
    },
  );
  route(
    app,
    {
      method: 'GET',
      url: '/v1/outbox/dead',
      scope: 'admin',
      tag,
      summary: `Dead letters: events delivery gave up on, most recently dead first (at most ${DEAD_LETTERS}; operator)`,
      responses: { 200: { description: 'The dead letters', schema: S.deadLettersSchema } },
    },
    async (request) => {
      operatorOnly(request);
      if (!dibs.backend.outbox) throw new DibsError('unsupported', `the ${dibs.kind} store has no outbox`);
      return { data: await dibs.backend.outbox.deadLetters(DEAD_LETTERS) };
    },
  );
  route(
    app,
    {
      method: 'POST',
      url: '/v1/events/:id/retry',
      scope: 'admin',
      tag,
      summary:
        'Retry a dead or waiting event now: it becomes due, keeping its attempts and log (operator). 409 when delivered or being delivered',
      responses: { 200: { description: 'Queued for the next dispatcher run', schema: S.retryResultSchema } },
    },
    async (request) => {
      operatorOnly(request);
      if (!dibs.backend.outbox) throw new DibsError('unsupported', `the ${dibs.kind} store has no outbox`);
      const id = request.params.id!;
      const outcome = await dibs.backend.outbox.retryNow(id);
      if (outcome === 'missing') throw new DibsError('not_found', `event '${id}' does not exist`, { details: { id } });
      if (outcome !== 'queued')
        throw new DibsError(
          'conflict',
          outcome === 'delivered' ? `event '${id}' is already delivered` : `event '${id}' is being delivered right now`,
          { details: { id, outcome } },
        );
      return { event: id, outcome };
    },
  );
}
