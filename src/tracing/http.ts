/**
 * A server span per HTTP request (`POST /v1/pools/:pool/claims`), child of the caller's trace when
 * the request carries a W3C `traceparent` header. The route handler runs inside it, so the facade
 * call and its store steps become its children. Registered by buildServer when its Dibs traces.
 */
import type { FastifyInstance, FastifyRequest, RouteHandlerMethod } from 'fastify';
import type { Context, Span } from '@opentelemetry/api';
import { TRACER_NAME } from './instrument.js';
import type { OtelApi } from './otel.js';

/** Probes and scrapes: a span every few seconds from every orchestrator says nothing. */
const QUIET_ROUTES = new Set(['/healthz', '/readyz', '/metrics']);

export function registerHttpTracing(app: FastifyInstance, api: OtelApi, version: string): void {
  const tracer = api.trace.getTracer(TRACER_NAME, version);
  const spans = new WeakMap<FastifyRequest, { span: Span; ctx: Context }>();

  app.addHook('onRequest', (request, _reply, done) => {
    const route = request.routeOptions.url;
    if (route !== undefined && QUIET_ROUTES.has(route)) return done();
    const parent = api.propagation.extract(api.ROOT_CONTEXT, request.headers);
    const span = tracer.startSpan(
      route ? `${request.method} ${route}` : request.method,
      {
        kind: api.SpanKind.SERVER,
        attributes: {
          'http.request.method': request.method,
          'url.path': request.url.split('?')[0],
          ...(route ? { 'http.route': route } : {}),
          'dibs.request_id': request.id,
        },
      },
      parent,
    );
    spans.set(request, { span, ctx: api.trace.setSpan(parent, span) });
    done();
  });

  // Body parsing continues from the socket's events, outside any context set in onRequest: the
  // handler is the part that must run in the span, so it is wrapped itself.
  app.addHook('onRoute', (options) => {
    const handler = options.handler as (...args: unknown[]) => unknown;
    options.handler = function (this: unknown, request: FastifyRequest, ...rest: unknown[]) {
      const entry = spans.get(request);
      return entry
        ? api.context.with(entry.ctx, handler, this, request, ...rest)
        : handler.call(this, request, ...rest);
    } as RouteHandlerMethod;
  });

  app.addHook('onResponse', (request, reply, done) => {
    const entry = spans.get(request);
    if (entry) {
      spans.delete(request);
      entry.span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) entry.span.setStatus({ code: api.SpanStatusCode.ERROR });
      entry.span.end();
    }
    done();
  });

  app.addHook('onRequestAbort', (request, done) => {
    const entry = spans.get(request);
    if (entry) {
      spans.delete(request);
      entry.span.setAttribute('dibs.aborted', true);
      entry.span.end();
    }
    done();
  });
}
