/**
 * A Jepsen-style checker for locks, judged on the resource they guard rather than on the lock's
 * own word. Worker processes record, on CLOCK_MONOTONIC (one clock for every process of the
 * machine, namespaces included), when each critical section began (grant handled), when its
 * holder learned the lease was lost, when it ended, and for every write through the guarded
 * resource when it was invoked and when its answer came back (accepted / refused / unknown when
 * the call failed). The resource itself keeps an append-only log of the writes it applied, in the
 * order it applied them. The checker then looks for:
 *
 * - `two-holders`: two leases of one key that both believed they held (from the grant to the end of
 *   the section or the loss signal, whichever came first) at overlapping times, and both had a
 *   write accepted inside that overlap — mutual exclusion broken as seen by the resource;
 * - `fence-order`: in the resource's log, a key's fence going down, or an equal fence from another
 *   lease — the fence guard let an older holder write after a newer one;
 * - `missing-ack`: a write its worker was told was accepted that is not in the log;
 * - `phantom`: a log entry no worker wrote, or one its worker was told was refused;
 * - `realtime-order`: two accepted writes of one key where the first completed before the second
 *   was invoked, yet the log has them the other way round.
 *
 * It judges only what it is given; `checkHistory` never consults a store, so a broken lock or a
 * broken guard cannot hide behind the store's own view (test/hostile/history-checker.test.ts shows
 * it failing on both).
 */

export interface SectionRecord {
  /** Identity of the lease: unique per grant (e.g. `${pid}:${fence}`). */
  lease: string;
  key: string;
  fence: number;
  /** When the holder's code started running with the lease (ms, CLOCK_MONOTONIC). */
  grantAt: number;
  /** When the section's code finished (before the release was sent). */
  endAt: number;
  /** When the holder's lost-lease signal fired, if it did before `endAt`. */
  lostAt?: number;
}

export interface WriteRecord {
  /** Unique per write; the resource logs it. */
  id: string;
  lease: string;
  key: string;
  fence: number;
  invokeAt: number;
  completeAt: number;
  outcome: 'accepted' | 'refused' | 'unknown';
}

export interface LogRecord {
  seq: number;
  key: string;
  writeId: string;
  fence: number;
  lease: string;
}

export interface History {
  sections: SectionRecord[];
  writes: WriteRecord[];
  log: LogRecord[];
}

export type ViolationKind = 'two-holders' | 'fence-order' | 'missing-ack' | 'phantom' | 'realtime-order';
export interface Violation {
  kind: ViolationKind;
  key: string;
  detail: string;
}

export interface Verdict {
  sections: number;
  lost: number;
  writes: { accepted: number; refused: number; unknown: number };
  violations: Violation[];
}

function byKey<T extends { key: string }>(items: T[]): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const item of items) {
    const list = map.get(item.key);
    if (list) list.push(item);
    else map.set(item.key, [item]);
  }
  return map;
}

export function checkHistory(history: History): Verdict {
  const violations: Violation[] = [];
  const writesById = new Map(history.writes.map((w) => [w.id, w]));
  const loggedSeq = new Map<string, number>();
  for (const entry of history.log) {
    const write = writesById.get(entry.writeId);
    if (!write)
      violations.push({
        kind: 'phantom',
        key: entry.key,
        detail: `log #${entry.seq} (fence ${entry.fence}) was written by nobody`,
      });
    else if (write.outcome === 'refused')
      violations.push({
        kind: 'phantom',
        key: entry.key,
        detail: `write ${write.id} was answered "refused" but the resource applied it (log #${entry.seq})`,
      });
    if (loggedSeq.has(entry.writeId))
      violations.push({ kind: 'phantom', key: entry.key, detail: `write ${entry.writeId} applied twice` });
    loggedSeq.set(entry.writeId, entry.seq);
  }
  for (const write of history.writes) {
    if (write.outcome === 'accepted' && !loggedSeq.has(write.id)) {
      violations.push({
        kind: 'missing-ack',
        key: write.key,
        detail: `write ${write.id} (fence ${write.fence}) was acknowledged but is not in the resource`,
      });
    }
  }

  for (const [key, entries] of byKey(history.log)) {
    const ordered = [...entries].sort((a, b) => a.seq - b.seq);
    for (let i = 1; i < ordered.length; i++) {
      const prev = ordered[i - 1]!;
      const cur = ordered[i]!;
      if (cur.fence < prev.fence || (cur.fence === prev.fence && cur.lease !== prev.lease)) {
        violations.push({
          kind: 'fence-order',
          key,
          detail: `log #${cur.seq} applied fence ${cur.fence} (${cur.lease}) after #${prev.seq} with fence ${prev.fence} (${prev.lease})`,
        });
      }
    }
  }

  for (const [key, writes] of byKey(history.writes.filter((w) => w.outcome === 'accepted' && loggedSeq.has(w.id)))) {
    const byCompletion = [...writes].sort((a, b) => a.completeAt - b.completeAt);
    const byInvoke = [...writes].sort((a, b) => a.invokeAt - b.invokeAt);
    // For each write, the latest-logged write that had completed before it was invoked must be
    // logged before it. One sweep: the max seq among writes completed so far.
    let j = 0;
    let maxSeq = -Infinity;
    let maxId = '';
    for (const w of byInvoke) {
      while (j < byCompletion.length && byCompletion[j]!.completeAt < w.invokeAt) {
        const seq = loggedSeq.get(byCompletion[j]!.id)!;
        if (seq > maxSeq) {
          maxSeq = seq;
          maxId = byCompletion[j]!.id;
        }
        j++;
      }
      const seq = loggedSeq.get(w.id)!;
      if (seq < maxSeq)
        violations.push({
          kind: 'realtime-order',
          key,
          detail: `write ${w.id} (log #${seq}) was invoked after ${maxId} (log #${maxSeq}) completed`,
        });
    }
  }

  const acceptedByLease = new Map<string, WriteRecord[]>();
  for (const w of history.writes) {
    if (w.outcome !== 'accepted') continue;
    const list = acceptedByLease.get(w.lease);
    if (list) list.push(w);
    else acceptedByLease.set(w.lease, [w]);
  }
  const wroteWithin = (lease: string, from: number, to: number) =>
    (acceptedByLease.get(lease) ?? []).some((w) => w.invokeAt < to && w.completeAt > from);
  for (const [key, sections] of byKey(history.sections)) {
    const believed = sections
      .map((s) => ({ s, from: s.grantAt, to: Math.min(s.endAt, s.lostAt ?? Infinity) }))
      .sort((a, b) => a.from - b.from);
    for (let i = 0; i < believed.length; i++) {
      for (let k = i + 1; k < believed.length && believed[k]!.from < believed[i]!.to; k++) {
        const a = believed[i]!;
        const b = believed[k]!;
        if (a.s.lease === b.s.lease) continue;
        const from = Math.max(a.from, b.from);
        const to = Math.min(a.to, b.to);
        if (from < to && wroteWithin(a.s.lease, from, to) && wroteWithin(b.s.lease, from, to)) {
          violations.push({
            kind: 'two-holders',
            key,
            detail: `${a.s.lease} and ${b.s.lease} both held and wrote during ${(to - from).toFixed(1)} ms`,
          });
        }
      }
    }
  }

  const count = (o: WriteRecord['outcome']) => history.writes.filter((w) => w.outcome === o).length;
  return {
    sections: history.sections.length,
    lost: history.sections.filter((s) => s.lostAt !== undefined).length,
    writes: { accepted: count('accepted'), refused: count('refused'), unknown: count('unknown') },
    violations,
  };
}

/** One line for test output: the checker's verdict with counts per violation kind. */
export function formatVerdict(label: string, verdict: Verdict): string {
  const kinds = new Map<string, number>();
  for (const v of verdict.violations) kinds.set(v.kind, (kinds.get(v.kind) ?? 0) + 1);
  const summary =
    verdict.violations.length === 0 ? 'VALID' : `INVALID (${[...kinds].map(([k, n]) => `${k} ×${n}`).join(', ')})`;
  return `[history] ${label}: ${verdict.sections} sections (${verdict.lost} lost), writes ${verdict.writes.accepted} accepted / ${verdict.writes.refused} refused / ${verdict.writes.unknown} unknown → ${summary}`;
}
