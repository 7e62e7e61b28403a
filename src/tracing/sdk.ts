/**
 * `dibs serve`'s OpenTelemetry set-up, from the standard OTEL_* environment variables. Off unless
 * they ask for traces: OTEL_TRACES_EXPORTER (otlp, console, or both; none = off), or an OTLP
 * endpoint (OTEL_EXPORTER_OTLP_ENDPOINT / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, which imply otlp).
 * OTEL_SDK_DISABLED=true turns it off whatever else is set.
 *
 * The SDK reads its other settings from the process environment itself: OTEL_SERVICE_NAME and
 * OTEL_RESOURCE_ATTRIBUTES (resource; service.name defaults to `dibs`), OTEL_TRACES_SAMPLER(_ARG),
 * OTEL_BSP_* (batching), OTEL_EXPORTER_OTLP_(TRACES_)HEADERS / _TIMEOUT. Spans go out as OTLP over
 * HTTP with JSON bodies (http/json), which every OTLP/HTTP receiver accepts on the same endpoint
 * as protobuf; OTLP over gRPC is refused at start. Context comes in and goes out as W3C trace
 * context (`traceparent`, `tracestate`) and baggage.
 *
 * The SDK packages are optional like the store drivers: a setting that needs them while they are
 * missing stops the start with `unsupported`, naming what to install.
 */
import { DibsError } from '../core/errors.js';

export const SDK_PACKAGES = [
  '@opentelemetry/api',
  '@opentelemetry/sdk-trace-node',
  '@opentelemetry/resources',
  '@opentelemetry/exporter-trace-otlp-http',
] as const;

export interface TracingSdk {
  /** Exports the spans still batched, then stops (bounded: a dead collector never holds a shutdown). */
  shutdown(): Promise<void>;
}

const EXPORTERS = new Set(['otlp', 'console', 'none']);
const SHUTDOWN_TIMEOUT_MS = 5000;

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
}

/** The exporters the environment asks for; empty = tracing off. Refuses settings that cannot work. */
export function tracingExporters(env: NodeJS.ProcessEnv): string[] {
  if (/^(true|1|yes)$/i.test(env.OTEL_SDK_DISABLED?.trim() ?? '')) return [];
  let exporters = list(env.OTEL_TRACES_EXPORTER);
  const unknown = exporters.filter((e) => !EXPORTERS.has(e));
  if (unknown.length > 0) {
    throw new DibsError(
      'invalid_input',
      `OTEL_TRACES_EXPORTER: unsupported exporter(s) '${unknown.join("', '")}' (dibs serve supports otlp, console, none)`,
      { field: 'OTEL_TRACES_EXPORTER' },
    );
  }
  if (exporters.length === 0 && (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT))
    exporters = ['otlp'];
  exporters = exporters.filter((e) => e !== 'none');
  const protocol = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || '').trim();
  if (exporters.includes('otlp') && protocol === 'grpc') {
    throw new DibsError(
      'invalid_input',
      'OTEL_EXPORTER_OTLP_PROTOCOL=grpc: dibs serve exports OTLP over HTTP only (http/json, usually port 4318)',
      { field: 'OTEL_EXPORTER_OTLP_PROTOCOL' },
    );
  }
  return exporters;
}

/** Registers a global tracer provider as the environment says, or returns null when tracing is off. */
export async function startTracingSdk(env: NodeJS.ProcessEnv, version: string): Promise<TracingSdk | null> {
  const exporters = tracingExporters(env);
  if (exporters.length === 0) return null;
  // sdk-trace-node re-exports the span processors and exporters of sdk-trace-base (its dependency)
  const [node, resources] = await Promise.all([
    need(() => import('@opentelemetry/sdk-trace-node')),
    need(() => import('@opentelemetry/resources')),
  ]);
  const processors = [];
  if (exporters.includes('otlp')) {
    const { OTLPTraceExporter } = await need(() => import('@opentelemetry/exporter-trace-otlp-http'));
    processors.push(new node.BatchSpanProcessor(new OTLPTraceExporter()));
  }
  if (exporters.includes('console')) processors.push(new node.BatchSpanProcessor(new node.ConsoleSpanExporter()));
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': 'dibs', 'service.version': version }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const provider = new node.NodeTracerProvider({ resource, spanProcessors: processors });
  provider.register();
  return {
    shutdown: async () => {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        provider.shutdown().catch(() => undefined),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, SHUTDOWN_TIMEOUT_MS).unref())),
      ]);
      clearTimeout(timer);
    },
  };
}

async function need<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') {
      const install = `npm install ${SDK_PACKAGES.join(' ')}`;
      throw new DibsError(
        'unsupported',
        `tracing (OTEL_* settings) needs the OpenTelemetry SDK packages, which are not all installed: ${install}`,
        { field: 'OTEL_TRACES_EXPORTER', details: { install }, cause: error },
      );
    }
    throw error;
  }
}
