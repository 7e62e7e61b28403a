/**
 * Rejects writes carrying a fence older than the newest one seen for a resource, so a holder
 * that stalled past its TTL cannot overwrite the work of the next holder.
 *
 * The rule: a write passes when its fence is GREATER than every fence the resource has seen, or
 * when it comes from the very lease that wrote last (same fence AND same owner token — a holder
 * writing twice, also after renewing). An equal fence from another holder is refused: two leases
 * must never both pass with one fence, even if a store were ever to hand a fence out twice. A bare
 * number proves no identity, so it passes only when strictly greater.
 *
 * In a database, the same rule is one conditional write (store a hash of the token, not the token):
 *   UPDATE t SET ..., fence = $fence, writer = $holder
 *   WHERE id = $id AND (fence < $fence OR (fence = $fence AND writer = $holder))  -- 0 rows → stale
 */
import { DibsError } from '../errors.js';

/** What a guarded write presents: a lease (or anything with its fence and owner token), or a bare fence. */
export type Fenced = number | { fence: number; token: string };

export class FenceGuard {
  private readonly newest = new Map<string, { fence: number; holder: string | null }>();

  /** Returns true and records the write when its fence is the newest seen (see the rule above). */
  accept(resource: string, writer: Fenced): boolean {
    const { fence, holder } =
      typeof writer === 'number'
        ? { fence: writer, holder: null }
        : { fence: writer.fence, holder: ownerOf(writer.token) };
    const seen = this.newest.get(resource);
    if (seen && (fence < seen.fence || (fence === seen.fence && (holder === null || holder !== seen.holder))))
      return false;
    this.newest.set(resource, { fence, holder });
    return true;
  }

  /** Like `accept`, but throws `lease_lost` for a stale write. */
  check(resource: string, writer: Fenced): void {
    if (!this.accept(resource, writer)) {
      const fence = typeof writer === 'number' ? writer : writer.fence;
      const newest = this.newest.get(resource)!.fence;
      const why = fence === newest ? `another holder already wrote with fence ${newest}` : `fence ${newest} is newer`;
      throw new DibsError('lease_lost', `write to '${resource}' with fence ${fence} rejected: ${why}`, {
        details: { resource, fence },
      });
    }
  }
}

/**
 * The owner part of a lease token: a lease's token is the store's owner token + `.<ttlMs>`, and a
 * renewal through another instance may present the bare store token; both are the same holder.
 */
function ownerOf(token: string): string {
  const dot = token.indexOf('.');
  return dot < 0 ? token : token.slice(0, dot);
}
