/**
 * Rejects writes carrying a fence older than the newest one seen for a resource, so a holder
 * that stalled past its TTL cannot overwrite the work of the next holder.
 * In a database, the same rule is one conditional write:
 *   UPDATE t SET ..., fence = $fence WHERE id = $id AND fence < $fence   -- 0 rows → stale
 */
import { DibsError } from '../errors.js';

export class FenceGuard {
  private readonly newest = new Map<string, number>();

  /** Returns true and records `fence` when it is the newest seen (equal = same holder, allowed). */
  accept(resource: string, fence: number): boolean {
    const seen = this.newest.get(resource) ?? 0;
    if (fence < seen) return false;
    this.newest.set(resource, fence);
    return true;
  }

  /** Like `accept`, but throws `lease_lost` for a stale fence. */
  check(resource: string, fence: number): void {
    if (!this.accept(resource, fence)) {
      throw new DibsError('lease_lost', `write to '${resource}' with fence ${fence} rejected: fence ${this.newest.get(resource)} is newer`, { details: { resource, fence } });
    }
  }
}
