/**
 * The fault schedule of the reliability suite (test/faults): while a multi-process workload runs,
 * inject network faults through a FaultProxy on a fixed, seeded schedule, and count what was
 * injected. Bounded: `FAULTS_LONG=1` runs a longer soak; CI runs a few seconds per store.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FaultProxy } from './fault-proxy.js';

export const LONG = process.env.FAULTS_LONG === '1';

/** How long faults are injected per round: a few seconds in CI, a minute in the soak. */
export const FAULT_WINDOW_MS = LONG ? 60_000 : 3_000;

export type NetworkFault = 'reset' | 'stall' | 'blackhole' | 'refuse';

export interface FaultLog {
  injected: Record<NetworkFault, number>;
}

/**
 * Runs the schedule until `windowMs` has passed: each step waits a moment of normal traffic, then
 * injects the next fault of the cycle. A black hole lasts longer than the store's timeouts
 * (`timeoutMs`) so calls really hang and must time out; it ends with a reset, as a dead route
 * ends when the peer gives up. The proxy is healthy when this returns.
 */
export async function networkFaults(
  proxy: FaultProxy,
  options: { windowMs?: number; timeoutMs: number },
): Promise<FaultLog> {
  const log: FaultLog = { injected: { reset: 0, stall: 0, blackhole: 0, refuse: 0 } };
  const cycle: NetworkFault[] = ['reset', 'stall', 'blackhole', 'reset', 'refuse', 'stall'];
  const end = Date.now() + (options.windowMs ?? FAULT_WINDOW_MS);
  for (let i = 0; Date.now() < end; i++) {
    await sleep(150);
    const fault = cycle[i % cycle.length]!;
    log.injected[fault]++;
    switch (fault) {
      case 'reset':
        proxy.reset();
        break;
      case 'stall':
        await proxy.stall(300);
        break;
      case 'blackhole':
        proxy.blackhole(true);
        await sleep(options.timeoutMs + 300);
        proxy.blackhole(false);
        proxy.reset();
        break;
      case 'refuse':
        proxy.refuse(true);
        proxy.reset();
        await sleep(300);
        proxy.refuse(false);
        break;
    }
  }
  return log;
}
