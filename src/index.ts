import type { BackendOptions } from './core/backend.js';
import { Dibs } from './core/dibs.js';
import { DEFAULT_STORE, openBackend } from './backends/registry.js';
import { loadOtel } from './tracing/otel.js';
import { traceDibs } from './tracing/instrument.js';

export { Dibs } from './core/dibs.js';
export { Pools } from './core/pools/facade.js';
export { Sales } from './core/sales/facade.js';
export { WaitingRooms } from './core/sales/waiting-room-facade.js';
export { Forecasts } from './core/forecast-facade.js';
export {
  CHARSETS,
  codeShape,
  luhnCheck,
  type GenerateInput,
  type GenerateResult,
  type GenerateProgress,
} from './core/generate.js';
export { forecastFrom, emptySoonStep, type Forecast, type ForecastBackend } from './core/forecast.js';
export type {
  Ticket,
  TicketStatus,
  WaitingRoom,
  WaitingRoomSpec,
  WaitingRoomBackend,
  RoomDraw,
} from './core/sales/waiting-room.js';
export { drawOrder, drawnPlaces } from './core/sales/fair-draw.js';
export type * from './core/sales/types.js';
export type { SaleBackend, SaleViolation } from './core/sales/backend.js';
export { preflight, type Problem } from './core/sales/rules.js';
export { DibsError, isDibsError, ERROR_CODES, type ErrorCode } from './core/errors.js';
export type * from './core/types.js';
export type { Backend, BackendFactory, BackendOptions } from './core/backend.js';
export type { PoolBackend } from './core/pools/backend.js';
export { LIMITS } from './core/schemas.js';
export { DEFAULT_STORE, redact } from './backends/registry.js';

export interface OpenOptions extends BackendOptions {
  /**
   * OpenTelemetry spans for every facade call and store step (docs/operations.md, "Tracing"),
   * through the global tracer provider your application registers. Needs the optional package
   * `@opentelemetry/api` (`unsupported` when it is missing). Default false.
   */
  tracing?: boolean;
}

/**
 * Opens dibs on a store URL: `sqlite:./dibs.db` (default), `sqlite::memory:`, `postgres://…`,
 * `redis://…`. Migrations run on open.
 */
export async function openDibs(
  store: string = process.env.DIBS_STORE ?? DEFAULT_STORE,
  options: OpenOptions = {},
): Promise<Dibs> {
  const { tracing, ...backendOptions } = options;
  // loaded before the store opens: a missing package fails at once, with nothing to close
  const api = tracing === true ? await loadOtel() : null;
  const backend = await openBackend(store, backendOptions);
  return api ? traceDibs(backend, api) : new Dibs(backend);
}
export { FenceGuard } from './core/locks/fence-guard.js';
export type {
  Lease,
  LockInfo,
  LockHolder,
  AcquireOptions,
  RunExclusiveOptions,
  CounterValue,
} from './core/locks/types.js';
export type { LockBackend, CounterBackend } from './core/locks/backend.js';
export type {
  LimitAlgorithm,
  LimitDefinition,
  LimitInput,
  LimitUpdate,
  LimitDecision,
  LimitAllowed,
  LimitDenied,
} from './core/limits/types.js';
export type { LimitBackend } from './core/limits/backend.js';
