/**
 * A commit the synchronous standby never confirmed must not be acknowledged. When a commit's wait
 * for the standby (synchronous_standby_names) is cancelled — pg_cancel_backend by an operator, a
 * monitoring job or a proxy that cancels long statements (statement_timeout does not: PostgreSQL
 * stops it before the commit, so dibs' client timeout ends such a wait) — PostgreSQL does not fail the COMMIT: it answers success with only a WARNING
 * ("canceling wait for synchronous replication … already committed locally, but might not have
 * been replicated"). Taken at its word, dibs would acknowledge a claim that the next failover loses.
 * This turns that answer into an error of the statement it came with (SQLSTATE 57014, so
 * `unavailable`: the outcome is unknown, a keyed retry replays it on whichever server has it).
 * The WARNING carries no SQLSTATE of its own, so it is recognised by its text (English server
 * messages, `lc_messages` C or en — the default of the server images and managed services).
 */
import type pg from 'pg';

const CANCELLED_WAIT = /canceling (the )?wait for synchronous replication/i;

interface InternalQuery {
  _canceledDueToError?: Error | false;
}

/** Watches one connection's notices; a cancelled synchronous-replication wait fails the statement in flight. */
export function refuseUnreplicatedCommits(client: pg.ClientBase): void {
  client.on('notice', (notice: { message?: string }) => {
    if (!CANCELLED_WAIT.test(notice.message ?? '')) return;
    // pg's Query fails at ReadyForQuery with this error instead of answering its result
    const active = (client as unknown as { _getActiveQuery?: () => InternalQuery | null })._getActiveQuery?.();
    if (active && !active._canceledDueToError) {
      active._canceledDueToError = Object.assign(new Error(`postgres: the commit was not confirmed by the synchronous standby (${notice.message}); it may not survive a failover`), { code: '57014' });
    }
  });
}
