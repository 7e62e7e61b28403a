/**
 * The one place that loads `@opentelemetry/api`. It is an optional peer dependency: loaded only
 * when tracing is turned on (`openDibs(url, { tracing: true })`, or `dibs serve` with the OTEL_*
 * variables), so a process that does not trace never loads it and does not need it installed.
 *
 * Everything else in dibs reaches the API through `activeOtel()`, which is null until then: the
 * hooks in the store adapters and the job runner cost one null check when tracing is off.
 */
import type * as Api from '@opentelemetry/api';
import { DibsError } from '../core/errors.js';

export type OtelApi = typeof Api;

export const OTEL_API_PACKAGE = '@opentelemetry/api';

let loaded: OtelApi | null = null;
/** Context keys, made once the API is loaded. */
let keys: { untraced: symbol; step: symbol; call: symbol } | null = null;

/** The API when some Dibs instance of this process traces; null otherwise. */
export function activeOtel(): OtelApi | null {
  return loaded;
}

export function contextKeys(): { untraced: symbol; step: symbol; call: symbol } {
  if (!keys) throw new Error('tracing is not loaded');
  return keys;
}

/** Loads the API (once); a missing package is `unsupported`, naming what to install. */
export async function loadOtel(): Promise<OtelApi> {
  if (loaded) return loaded;
  let api: OtelApi;
  try {
    api = (await import(OTEL_API_PACKAGE)) as OtelApi;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      throw new DibsError(
        'unsupported',
        `tracing needs the npm package '${OTEL_API_PACKAGE}', which is not installed: npm install ${OTEL_API_PACKAGE}`,
        {
          field: 'tracing',
          details: { package: OTEL_API_PACKAGE, install: `npm install ${OTEL_API_PACKAGE}` },
          cause: error,
        },
      );
    }
    throw error;
  }
  // An ESM import of the CommonJS build puts the API on `default` too; either shape works.
  const resolved = (api as unknown as { trace?: unknown }).trace
    ? api
    : (api as unknown as { default: OtelApi }).default;
  keys = {
    untraced: resolved.createContextKey('dibs.untraced') as symbol,
    step: resolved.createContextKey('dibs.store-step') as symbol,
    call: resolved.createContextKey('dibs.facade-call') as symbol,
  };
  loaded = resolved;
  return resolved;
}

/**
 * Runs `fn` with dibs' own spans turned off (the background jobs: a sweep every second would
 * otherwise start a trace every second). Spans of other libraries are not affected.
 */
export function untraced<T>(fn: () => T): T {
  const api = loaded;
  if (!api) return fn();
  return api.context.with(api.context.active().setValue(contextKeys().untraced, true), fn);
}

/** Whether dibs' spans are turned off here (see `untraced`). */
export function isUntraced(api: OtelApi): boolean {
  return api.context.active().getValue(contextKeys().untraced) === true;
}
