import type { BackendOptions } from './core/backend.js';
import { Dibs } from './core/dibs.js';
import { DEFAULT_STORE, openBackend } from './backends/registry.js';

export { Dibs, Pools } from './core/dibs.js';
export { Sales } from './core/sales/facade.js';
export { WaitingRooms } from './core/sales/waiting-room-facade.js';
export { Forecasts } from './core/forecast-facade.js';
export { CHARSETS, codeShape, luhnCheck, type GenerateInput, type GenerateResult, type GenerateProgress } from './core/generate.js';
export { forecastFrom, emptySoonStep, type Forecast, type ForecastBackend } from './core/forecast.js';
export type { Ticket, TicketStatus, WaitingRoom, WaitingRoomSpec, WaitingRoomBackend } from './core/sales/waiting-room.js';
export type * from './core/sales/types.js';
export type { SaleBackend, SaleViolation } from './core/sales/backend.js';
export { preflight, type Problem } from './core/sales/rules.js';
export { DibsError, isDibsError, ERROR_CODES, type ErrorCode } from './core/errors.js';
export type * from './core/types.js';
export type { Backend, PoolBackend, BackendFactory, BackendOptions } from './core/backend.js';
export { LIMITS } from './core/schemas.js';
export { DEFAULT_STORE, redact } from './backends/registry.js';

/**
 * Opens dibs on a store URL: `sqlite:./dibs.db` (default), `sqlite::memory:`, `postgres://…`,
 * `redis://…`. Migrations run on open.
 */
export async function openDibs(store: string = process.env.DIBS_STORE ?? DEFAULT_STORE, options: BackendOptions = {}): Promise<Dibs> {
  return new Dibs(await openBackend(store, options));
}
type RunLoadtest = typeof import('./loadtest/run.js').runLoadtest;
/**
 * The load tester (child processes, CSV, its option schemas) loads on first use: a short-lived
 * function importing dibs does not pay for it (bench/cold-start.ts measures the import).
 */
export const runLoadtest = ((...args: Parameters<RunLoadtest>) => import('./loadtest/run.js').then((m) => m.runLoadtest(...args))) as RunLoadtest;
export { verifyRun, verifyPool } from './loadtest/verify.js';
export { FenceGuard } from './core/locks/fence-guard.js';
export type { Lease, LockInfo, LockHolder, AcquireOptions, RunExclusiveOptions, CounterValue } from './core/locks/types.js';
export type { LockBackend, CounterBackend } from './core/locks/backend.js';
