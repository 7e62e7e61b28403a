/**
 * Grouped claims (PostgreSQL, Firestore): one statement or transaction serves several waiting
 * claims at once, which is only sound when no two of them share a claimant or an idempotency key.
 */

/** Claimants and idempotency keys of the groups already running, which a new group must not repeat. */
export interface InFlight {
  claimants: Set<string>;
  keys: Set<string>;
}

/**
 * Takes up to `max` waiting claims with pairwise distinct claimants and keys, oldest first. With
 * `busy`, claims whose claimant or key is in a group still running wait too (and the taken ones are
 * added to it): two concurrent transactions for one claimant only collide (see firestore/claim.ts).
 */
export function takeGroup<W extends { request: { claimant: string; key: string | null } }>(queue: W[], max: number, busy?: InFlight): W[] {
  const group: W[] = [];
  const claimants = busy?.claimants ?? new Set<string>();
  const keys = busy?.keys ?? new Set<string>();
  for (let i = 0; i < queue.length && group.length < max; ) {
    const { claimant, key } = queue[i]!.request;
    if (claimants.has(claimant) || (key !== null && keys.has(key))) {
      i++;
      continue;
    }
    claimants.add(claimant);
    if (key !== null) keys.add(key);
    group.push(queue.splice(i, 1)[0]!);
  }
  return group;
}

/** Gives back what `takeGroup` added to `busy` for `group`, once that group has finished. */
export function releaseGroup<W extends { request: { claimant: string; key: string | null } }>(group: readonly W[], busy: InFlight): void {
  for (const { request } of group) {
    busy.claimants.delete(request.claimant);
    if (request.key !== null) busy.keys.delete(request.key);
  }
}
