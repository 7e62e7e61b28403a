/**
 * Wake-on-release for PostgreSQL: ONE dedicated connection per backend instance LISTENs on the
 * schema's lock channel and dispatches each notification (payload = lock key) to the in-process
 * waiters of that key. Lazily connected on the first subscription; when the connection drops it
 * reconnects with backoff and then wakes every waiter once (a release may have been missed while
 * it was down). Waiters also poll, so a dead listener costs latency, never correctness.
 * Behind PgBouncer in transaction mode LISTEN does not work; waiters then rely on the poll.
 */
import { EventEmitter } from 'node:events';
import pg from 'pg';
import { quoteIdent } from './connection.js';

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5_000;
export const LISTENER_APPLICATION_NAME = 'dibs-lock-listener';

/** NOTIFY channel of a schema (identifiers are cut at 63 bytes; a shared channel only wakes spuriously). */
export function lockChannel(schema: string): string {
  return `dibs_locks_${schema}`.slice(0, 63);
}

export class ReleaseListener {
  private readonly waiters = new EventEmitter().setMaxListeners(0);
  private client: pg.Client | null = null;
  private connecting = false;
  private closed = false;
  private retryMs = RETRY_MIN_MS;
  private retryTimer: NodeJS.Timeout | undefined;
  /** Resolves when the current connection attempt ends (for tests and close). */
  private attempt: Promise<void> = Promise.resolve();

  constructor(
    /** null: no LISTEN connection at all (behind a transaction pooler); waiters rely on the poll. */
    private readonly connectionString: string | null,
    readonly channel: string,
    private readonly connectTimeoutMs: number,
    /** pg.Client, or the class that connects to the primary among several hosts (primary.ts). */
    private readonly Client: typeof pg.Client = pg.Client,
  ) {}

  /** Calls `listener` on every release of `key` seen by this listener. Returns the unsubscribe. */
  on(key: string, listener: () => void): () => void {
    this.waiters.on(key, listener);
    this.ensure();
    return () => this.waiters.off(key, listener);
  }

  /** Starts the connection now (optional: `on` does it lazily). Resolves once LISTEN ran or failed. */
  start(): Promise<void> {
    this.ensure();
    return this.attempt;
  }

  get listening(): boolean {
    return this.client !== null;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    await this.attempt;
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }

  private ensure(): void {
    if (this.client || this.connecting || this.closed || this.connectionString === null) return;
    this.connecting = true;
    this.attempt = this.connect().finally(() => {
      this.connecting = false;
    });
  }

  private async connect(): Promise<void> {
    const client = new this.Client({
      connectionString: this.connectionString!,
      connectionTimeoutMillis: this.connectTimeoutMs,
      application_name: LISTENER_APPLICATION_NAME,
    });
    client.on('error', () => this.drop(client));
    client.on('end', () => this.drop(client));
    client.on('notification', (message) => {
      if (message.channel === this.channel && message.payload) this.waiters.emit(message.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${quoteIdent(this.channel)}`);
    } catch {
      await client.end().catch(() => {});
      this.scheduleReconnect();
      return;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    const reconnected = this.retryMs > RETRY_MIN_MS;
    this.client = client;
    this.retryMs = RETRY_MIN_MS;
    // Releases during the outage were not delivered: let every waiter try once more now.
    if (reconnected) for (const key of this.waiters.eventNames()) this.waiters.emit(key);
  }

  private drop(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    client.end().catch(() => {});
    this.retryMs = Math.max(this.retryMs, RETRY_MIN_MS * 2); // marks "reconnected" for the wake-all above
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.closed) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.ensure(), this.retryMs).unref();
    this.retryMs = Math.min(this.retryMs * 2, RETRY_MAX_MS);
  }
}
