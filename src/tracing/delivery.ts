/**
 * Spans for outbox deliveries, and the `traceparent` they hand on: each delivery attempt is a
 * PRODUCER span (`dibs.outbox deliver pool.low_stock`), and webhooks and stream entries carry its
 * context, so a receiver's own spans join the delivery's trace. An attempt starts a trace of its
 * own: it runs in a background job, long after (and apart from) the request that recorded the
 * event; the event id (`dibs.event.id`) ties the two together. Without tracing, all of it is a
 * null check.
 */
import type { DueEvent } from '../core/outbox.js';
import { TRACER_NAME } from './instrument.js';
import { activeOtel } from './otel.js';

export async function inDeliverySpan(event: DueEvent, deliver: () => Promise<string>): Promise<string> {
  const api = activeOtel();
  if (!api) return deliver();
  // from the root: the job that runs deliveries is untraced, and an attempt is its own trace
  const span = api.trace.getTracer(TRACER_NAME).startSpan(
    `dibs.outbox deliver ${event.type}`,
    {
      kind: api.SpanKind.PRODUCER,
      attributes: {
        'dibs.operation': 'outbox.deliver',
        'dibs.event.id': event.id,
        'dibs.event.type': event.type,
        'dibs.event.attempt': event.attempts + 1,
      },
    },
    api.ROOT_CONTEXT,
  );
  try {
    const outcome = await api.context.with(api.trace.setSpan(api.ROOT_CONTEXT, span), deliver);
    span.setAttribute('dibs.outcome', outcome);
    return outcome;
  } finally {
    span.end();
  }
}

/** Records why the attempt in progress failed on its span. */
export function noteDeliveryFailure(error: unknown): void {
  const api = activeOtel();
  const span = api?.trace.getActiveSpan();
  if (!api || !span) return;
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

/** `traceparent` (and `tracestate`) of the active span, for an outgoing message; empty without tracing. */
export function traceHeaders(): Record<string, string> {
  const api = activeOtel();
  if (!api) return {};
  const headers: Record<string, string> = {};
  api.propagation.inject(api.context.active(), headers);
  return headers;
}
