/**
 * `/v1/sales/:sale/waiting-room…`: the fair line of a flash sale over HTTP, a thin shell over
 * `dibs.waitingRooms`. The ticket token travels in the `Dibs-Ticket` header (kept out of URLs and
 * access logs); the server-sent event stream also takes `?ticket=` because browsers' EventSource
 * cannot set headers.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Dibs } from '../../core/dibs.js';
import { DibsError } from '../../core/errors.js';
import type { Ticket } from '../../core/sales/waiting-room.js';
import type { ServiceContext } from '../context.js';
import { bodyObject, notFoundBeforeBadInput, pick, queryString } from '../http-input.js';
import * as S from '../api-schemas.js';
import { route } from '../routing.js';

type Req = FastifyRequest<{ Params: Record<string, string> }>;
const tag = 'Waiting rooms';
const saleParam = (request: Req) => request.tenant.sale(request.params.sale);

/** How often the event stream re-checks a ticket (each check also runs admission). */
const STREAM_POLL_MS = 500;
/** An event stream ends after this long; clients reconnect (EventSource does so by itself). */
const STREAM_MAX_MS = 5 * 60_000;

function ticketToken(request: FastifyRequest, allowQuery = false): string {
  const header = request.headers['dibs-ticket'];
  const token =
    (Array.isArray(header) ? header[0] : header) ?? (allowQuery ? queryString(request, 'ticket') : undefined);
  if (!token)
    throw new DibsError(
      'invalid_input',
      `ticket: send the ticket token in the Dibs-Ticket header${allowQuery ? ' (or ?ticket=)' : ''}`,
      { field: 'ticket' },
    );
  return token;
}

export function waitingRoomRoutes(app: FastifyInstance, { dibs }: ServiceContext): void {
  /** Bad input about a sale this tenant cannot see is a 404, like any request about it. */
  const guarded = <T>(request: Req, fn: (sale: string) => Promise<T>) => {
    const sale = saleParam(request);
    return notFoundBeforeBadInput(
      () => dibs.sales.get(sale),
      () => fn(sale),
    );
  };
  route(
    app,
    {
      method: 'PUT',
      url: '/v1/sales/:sale/waiting-room',
      scope: 'sales:admin',
      tag,
      summary: 'Put a capped sale behind a waiting room (or change its rate, window, fair start and verification)',
      body: S.waitingRoomBodySchema,
      responses: { 200: { description: 'The room with ticket counts', schema: S.waitingRoomSchema } },
    },
    async (request) => {
      return guarded(request, (sale) =>
        dibs.waitingRooms.enable(
          sale,
          pick(bodyObject(request), ['admitPerSecond', 'windowMs', 'fairStart', 'verification']) as never,
        ),
      );
    },
  );
  route(
    app,
    {
      method: 'GET',
      url: '/v1/sales/:sale/waiting-room',
      scope: 'sales:read',
      tag,
      summary: 'The room: rate, window, tickets by status (admission runs first)',
      responses: { 200: { description: 'The room', schema: S.waitingRoomSchema } },
    },
    async (request) => dibs.waitingRooms.get(saleParam(request)),
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/sales/:sale/waiting-room/tickets',
      scope: 'sales:buy',
      tag,
      summary: "Join the line: a ticket in arrival order (joining again returns the customer's ticket)",
      body: S.joinBodySchema,
      responses: { 201: { description: 'The ticket with its bearer token', schema: S.ticketSchema } },
    },
    async (request, reply) => {
      const ticket = await guarded(request, (sale) =>
        dibs.waitingRooms.join(sale, pick(bodyObject(request), ['customer']).customer as string),
      );
      return reply.status(201).send(ticket);
    },
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/sales/:sale/waiting-room/tickets/:customer',
      scope: 'sales:buy',
      tag,
      summary: "A ticket's status and position (token in the Dibs-Ticket header)",
      responses: { 200: { description: 'The ticket', schema: S.ticketSchema } },
    },
    async (request) =>
      guarded(request, (sale) => dibs.waitingRooms.ticket(sale, request.params.customer!, ticketToken(request))),
  );

  route(
    app,
    {
      method: 'GET',
      url: '/v1/sales/:sale/waiting-room/tickets/:customer/events',
      scope: 'sales:buy',
      tag,
      summary: 'Server-sent events: the ticket whenever its status or position changes',
      responses: { 200: { description: 'text/event-stream', contentType: 'text/event-stream' } },
    },
    async (request, reply) => guarded(request, (sale) => streamTicket(dibs, sale, request, reply)),
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/sales/:sale/waiting-room/tickets/:customer/verification',
      scope: 'sales:admin',
      tag,
      summary:
        'Mark a ticket verified once your own check of the customer passed (Dibs-Ticket header); a room with verification admits only verified tickets',
      responses: { 200: { description: 'The ticket, admitted at once if its turn has come', schema: S.ticketSchema } },
    },
    async (request) =>
      guarded(request, (sale) => dibs.waitingRooms.verify(sale, request.params.customer!, ticketToken(request))),
  );

  route(
    app,
    {
      method: 'POST',
      url: '/v1/sales/:sale/waiting-room/reservations',
      scope: 'sales:buy',
      tag,
      summary: 'Hold units with an admitted ticket (Dibs-Ticket header); confirm through /v1/reservations',
      body: S.roomReserveBodySchema,
      responses: {
        201: { description: 'The hold', schema: S.holdResultSchema },
        200: { description: 'The same hold again (retry)', schema: S.holdResultSchema },
      },
    },
    async (request, reply) => {
      const result = await guarded(request, (sale) => {
        const body = pick(bodyObject(request), ['customer', 'quantity', 'ttlMs']);
        if (body.ttlMs === undefined)
          throw new DibsError('invalid_input', 'ttlMs: required, how long to hold the units (1000 – 86400000)', {
            field: 'ttlMs',
          });
        return dibs.waitingRooms.reserve(
          sale,
          body.customer as string,
          ticketToken(request),
          (body.quantity ?? 1) as number,
          body.ttlMs as number,
        );
      });
      if (result.replayed) void reply.header('idempotent-replayed', 'true');
      return reply.status(result.replayed ? 200 : 201).send(result);
    },
  );
}

/**
 * Server-sent events for one ticket: a `ticket` event whenever its status or position changes,
 * ending once the ticket can change no more (admitted, used, expired, sold out) or after
 * STREAM_MAX_MS. The first check happens before the stream opens, so a bad token is a plain 4xx.
 */
async function streamTicket(dibs: Dibs, sale: string, request: Req, reply: FastifyReply): Promise<void> {
  const customer = request.params.customer!;
  const token = ticketToken(request, true);
  let ticket: Ticket = await dibs.waitingRooms.ticket(sale, customer, token);
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-request-id': request.id,
  });
  let closed = false;
  request.raw.on('close', () => (closed = true));
  // the raw stream bypasses the serializer: take the tenant's namespace off by hand
  const send = (t: Ticket) =>
    res.write(`event: ticket\ndata: ${JSON.stringify(request.tenant.external({ ...t, token: undefined }))}\n\n`);
  send(ticket);
  const until = Date.now() + STREAM_MAX_MS;
  while (!closed && ticket.status === 'waiting' && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, STREAM_POLL_MS));
    try {
      const next = await dibs.waitingRooms.ticket(sale, customer, token);
      if (next.status !== ticket.status || next.position !== ticket.position || next.place !== ticket.place) send(next);
      ticket = next;
    } catch (error) {
      const body = error instanceof DibsError ? error.toJSON() : { code: 'internal', message: 'ticket check failed' };
      res.write(
        `event: error\ndata: ${JSON.stringify({ error: { ...body, message: request.tenant.text(body.message) } })}\n\n`,
      );
      break;
    }
  }
  res.end();
}
