/**
 * Grouped claims (PostgreSQL, Firestore): one statement or transaction serves several waiting
 * claims at once, which is only sound when no two of them share a claimant or an idempotency key.
 */

/** Takes up to `max` waiting claims with pairwise distinct claimants and keys, oldest first. */
export function takeGroup<W extends { request: { claimant: string; key: string | null } }>(queue: W[], max: number): W[] {
  const group: W[] = [];
  const claimants = new Set<string>();
  const keys = new Set<string>();
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
