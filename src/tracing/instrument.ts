/**
 * Spans for the library: one per facade call (`dibs pools.claim`) and one per store step under it
 * (`sqlite pools.claim`), made by proxies at the two boundaries (the `Dibs` facade objects and the
 * backend's parts), so neither the facade nor any store adapter knows about tracing.
 *
 * Attributes on both: `dibs.store` (sqlite, postgres, redis, firestore, tiered), `dibs.operation`
 * (`pools.claim`, `locks.tryAcquire`, …), `dibs.outcome` (the answer's status when it has one —
 * claimed, already-held; bought for an order, held for a hold; `none` for an empty answer, `ok`
 * otherwise, or the error code: sold_out, unavailable, …) and `dibs.retries` (store step: times
 * the adapter ran the step again; facade call: those plus store steps it repeated, such as a lock
 * acquire polling).
 * `dibs.target` is the pool, sale, lock or counter name when the call names one. Claimants,
 * customers and codes are never recorded.
 */
import type { Attributes, Context, SpanKind, Tracer } from '@opentelemetry/api';
import type { Backend } from '../core/backend.js';
import { Dibs } from '../core/dibs.js';
import { isDibsError } from '../core/errors.js';
import { contextKeys, isUntraced, type OtelApi } from './otel.js';

export const TRACER_NAME = 'dibs';

/** The facade objects of `Dibs` whose calls get a span. */
const FACADES = ['pools', 'sales', 'semaphores', 'locks', 'counters', 'waitingRooms', 'forecasts'] as const;
/** The backend's parts whose calls are store steps. */
const STORE_PARTS = ['pools', 'sales', 'locks', 'counters', 'waitingRooms', 'forecasts', 'grants'] as const;
/** Synchronous, or not a step: no span. */
const NOT_STEPS = new Set<PropertyKey>(['constructor', 'onRelease', 'close']);

const DB_SYSTEM: Record<string, string> = {
  sqlite: 'sqlite',
  postgres: 'postgresql',
  redis: 'redis',
  firestore: 'gcp.firestore',
};

const traced = new WeakSet<Dibs>();

/** Whether `dibs` was opened with tracing (the HTTP service then traces its requests too). */
export function isTraced(dibs: Dibs): boolean {
  return traced.has(dibs);
}

interface CallScope {
  retries: number;
  steps: Map<string, number>;
}

/** A Dibs whose facade calls and store steps make spans. */
export function traceDibs(backend: Backend, api: OtelApi): Dibs {
  const tracer = api.trace.getTracer(TRACER_NAME);
  const store = backend.kind;
  const base: Attributes = { 'dibs.store': store, ...(DB_SYSTEM[store] ? { 'db.system.name': DB_SYSTEM[store] } : {}) };
  const tracedBackend = proxyParts(
    backend,
    STORE_PARTS,
    (part, method) => ({
      name: `${store} ${part}.${method}`,
      kind: api.SpanKind.CLIENT,
      operation: `${part}.${method}`,
      around: (ctx, run, target) => {
        // the same step on the same name again within one call: a retry (a waiting lock acquire)
        const key = `${part}.${method} ${target ?? ''}`;
        const step = { retries: 0 };
        const call = ctx.getValue(contextKeys().call) as CallScope | undefined;
        if (call) {
          const seen = (call.steps.get(key) ?? 0) + 1;
          call.steps.set(key, seen);
          if (seen > 1) call.retries++;
        }
        return run(ctx.setValue(contextKeys().step, step), () => {
          if (call) call.retries += step.retries;
          return step.retries;
        });
      },
    }),
    api,
    tracer,
    base,
  );
  const dibs = proxyParts(
    new Dibs(tracedBackend),
    FACADES,
    (part, method) => ({
      name: `dibs ${part}.${method}`,
      kind: api.SpanKind.INTERNAL,
      operation: `${part}.${method}`,
      around: (ctx, run) => {
        const call: CallScope = { retries: 0, steps: new Map() };
        return run(ctx.setValue(contextKeys().call, call), () => call.retries);
      },
    }),
    api,
    tracer,
    base,
  );
  traced.add(dibs);
  return dibs;
}

interface SpanPlan {
  name: string;
  kind: SpanKind;
  operation: string;
  /** Runs the call in a context of its own; `retries()` is read when it ends. */
  around: <T>(ctx: Context, run: (ctx: Context, retries: () => number) => T, target: string | undefined) => T;
}

/** `owner` with the listed parts replaced by proxies whose methods run in a span. */
function proxyParts<T extends object>(
  owner: T,
  parts: readonly string[],
  plan: (part: string, method: string) => SpanPlan,
  api: OtelApi,
  tracer: Tracer,
  base: Attributes,
): T {
  const proxies = new Map<string, object>();
  for (const part of parts) {
    const target = (owner as Record<string, unknown>)[part];
    if (target && typeof target === 'object') proxies.set(part, proxyMethods(target, part, plan, api, tracer, base));
  }
  return new Proxy(owner, {
    get(target, prop, receiver) {
      return typeof prop === 'string' && proxies.has(prop) ? proxies.get(prop) : Reflect.get(target, prop, receiver);
    },
  });
}

function proxyMethods(
  target: object,
  part: string,
  plan: (part: string, method: string) => SpanPlan,
  api: OtelApi,
  tracer: Tracer,
  base: Attributes,
): object {
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(target, {
    get(obj, prop) {
      const value = Reflect.get(obj, prop, obj);
      if (typeof value !== 'function') return value;
      let fn = wrapped.get(prop);
      if (!fn) {
        if (typeof prop !== 'string' || NOT_STEPS.has(prop) || isGenerator(value)) {
          // not a step, but bound to the adapter itself: its own calls of its methods are no steps either
          fn = value.bind(obj);
        } else {
          const p = plan(part, prop);
          fn = function (this: unknown, ...args: unknown[]) {
            return inSpan(api, tracer, p, base, args, () => Reflect.apply(value, obj, args));
          };
        }
        wrapped.set(prop, fn);
      }
      return fn;
    },
  });
}

function inSpan(
  api: OtelApi,
  tracer: Tracer,
  plan: SpanPlan,
  base: Attributes,
  args: unknown[],
  call: () => unknown,
): unknown {
  const parent = api.context.active();
  if (isUntraced(api)) return call();
  const target = typeof args[0] === 'string' ? args[0] : undefined;
  const span = tracer.startSpan(
    plan.name,
    {
      kind: plan.kind,
      attributes: {
        ...base,
        'dibs.operation': plan.operation,
        ...(target !== undefined ? { 'dibs.target': target } : {}),
      },
    },
    parent,
  );
  return plan.around(
    api.trace.setSpan(parent, span),
    (ctx, retries) => {
      const finish = (outcome: string, error?: unknown) => {
        span.setAttributes({ 'dibs.outcome': outcome, 'dibs.retries': retries() });
        if (error !== undefined && failed(error)) {
          span.recordException(error instanceof Error ? error : String(error));
          span.setStatus({
            code: api.SpanStatusCode.ERROR,
            message: error instanceof Error ? error.message : String(error),
          });
        }
        span.end();
      };
      let result: unknown;
      try {
        result = api.context.with(ctx, call);
      } catch (error) {
        finish(outcomeOfError(error), error);
        throw error;
      }
      if (isThenable(result)) {
        return result.then(
          (value) => {
            finish(outcomeOf(value));
            return value;
          },
          (error: unknown) => {
            finish(outcomeOfError(error), error);
            throw error;
          },
        );
      }
      finish(outcomeOf(result));
      return result;
    },
    target,
  );
}

/** The answer's status (claimed, already-held, …), bought (an order), held (a hold), `none` for null, else `ok`. */
function outcomeOf(value: unknown): string {
  if (value === null) return 'none';
  if (typeof value !== 'object' || value === undefined) return 'ok';
  const status = (value as { status?: unknown }).status;
  if (typeof status === 'string') return status;
  if ('order' in value) return 'bought';
  if ('hold' in value) return 'held';
  return 'ok';
}

function outcomeOfError(error: unknown): string {
  return isDibsError(error) ? error.code : 'error';
}

/** Answers such as sold_out or limit_reached are outcomes, not failures: only a failing store or a bug marks the span as an error. */
function failed(error: unknown): boolean {
  return !isDibsError(error) || error.code === 'unavailable' || error.code === 'internal';
}

function isThenable(value: unknown): value is Promise<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

function isGenerator(fn: unknown): boolean {
  const tag = Object.prototype.toString.call(fn);
  return tag === '[object AsyncGeneratorFunction]' || tag === '[object GeneratorFunction]';
}
