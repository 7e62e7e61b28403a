/**
 * A commit the synchronous standby never confirmed must not be acknowledged. When a commit's wait
 * for the standby (synchronous_standby_names) is cancelled — pg_cancel_backend by an operator, a
 * monitoring job or a proxy that cancels long statements (statement_timeout does not: PostgreSQL
 * stops it before the commit, so dibs' client timeout ends such a wait) — PostgreSQL does not fail the COMMIT: it answers success with only a WARNING
 * ("canceling wait for synchronous replication … already committed locally, but might not have
 * been replicated"). Taken at its word, dibs would acknowledge a claim that the next failover loses.
 * This turns that answer into an error of the statement it came with (SQLSTATE 57014, so
 * `unavailable`: the outcome is unknown, a keyed retry replays it on whichever server has it).
 * The WARNING carries no SQLSTATE of its own and its text follows the server's `lc_messages`, so it
 * is recognised by the routine that raised it (the notice's R field, never translated), with the
 * English text as a second witness for servers or proxies that leave R out.
 */
import type pg from 'pg';

const CANCELLED_WAIT = /canceling (the )?wait for synchronous replication/i;
/** syncrep.c's wait, in every PostgreSQL version that has synchronous replication. */
const SYNC_REP_WAIT = 'SyncRepWaitForLSN';

/** Whether a notice says a commit's wait for the synchronous standby was given up. */
export function isCancelledSyncWait(notice: { message?: string; routine?: string }): boolean {
  return notice.routine === SYNC_REP_WAIT || CANCELLED_WAIT.test(notice.message ?? '');
}

interface InternalQuery {
  _canceledDueToError?: Error | false;
}

/** Watches one connection's notices; a cancelled synchronous-replication wait fails the statement in flight. */
export function refuseUnreplicatedCommits(client: pg.ClientBase): void {
  client.on('notice', (notice: { message?: string; routine?: string }) => {
    if (!isCancelledSyncWait(notice)) return;
    // pg's Query fails at ReadyForQuery with this error instead of answering its result
    const active = (client as unknown as { _getActiveQuery?: () => InternalQuery | null })._getActiveQuery?.();
    if (active && !active._canceledDueToError) {
      active._canceledDueToError = Object.assign(
        new Error(
          `postgres: the commit was not confirmed by the synchronous standby (${notice.message}); it may not survive a failover`,
        ),
        { code: '57014' },
      );
    }
  });
}
