/**
 * The public library surface: one facade per feature over the store's backend. Each facade
 * validates every input once and delegates, so every backend gets the same, already-clean
 * arguments and callers get the same typed errors whichever store they run on.
 */
import { WaitingRooms } from './sales/waiting-room-facade.js';
import { Forecasts } from './forecast-facade.js';
import type { Backend } from './backend.js';
import type { Health } from './types.js';
import { Pools } from './pools/facade.js';
import { Sales } from './sales/facade.js';
import { Counters, Locks, Semaphores } from './locks/facade.js';
import { Limits } from './limits/facade.js';

export class Dibs {
  readonly pools: Pools;
  readonly sales: Sales;
  readonly semaphores: Semaphores;
  readonly locks: Locks;
  readonly counters: Counters;
  readonly limits: Limits;
  readonly waitingRooms: WaitingRooms;
  readonly forecasts: Forecasts;

  constructor(readonly backend: Backend) {
    this.pools = new Pools(backend.pools);
    this.sales = new Sales(backend.sales, backend.kind);
    this.semaphores = new Semaphores(backend.locks, backend.kind);
    this.locks = new Locks(this.semaphores);
    this.counters = new Counters(backend.counters, backend.kind);
    this.limits = new Limits(backend.limits);
    this.waitingRooms = new WaitingRooms(backend.waitingRooms, backend.kind);
    this.forecasts = new Forecasts(backend.forecasts, backend.kind);
  }

  get kind(): string {
    return this.backend.kind;
  }

  health(): Promise<Health> {
    return this.backend.health();
  }

  close(): Promise<void> {
    return this.backend.close();
  }
}
