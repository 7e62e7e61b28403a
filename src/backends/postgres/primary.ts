/**
 * Reaching the primary among several hosts (node-postgres has no multi-host support): every new
 * connection goes to the host the selector currently believes is the primary; the selector finds
 * it by probing the hosts (all at once; the first to answer that qualifies wins — libpq's
 * `target_session_attrs=read-write` check, without its one-host-at-a-time wait) and forgets it the moment a connection to it fails or a
 * statement there answers "read-only" (SQLSTATE 25006: a standby, or a primary demoted under us).
 * A new connection is checked once more after it is open — the primary may have changed since the
 * probe — so a pool never keeps a connection to a read-only server: such a connect fails with
 * 25006, which the caller sees as `unavailable`, and the next connect probes afresh.
 *
 * What no client can do: tell a demoted primary that came back as a standalone writable server
 * (split brain) from the real one. That is the operator's fencing (docs/operations.md).
 */
import pg from 'pg';
import type { PgHost, SessionAttrs } from './hosts.js';

const READ_ONLY = '25006';

/** An error carrying a SQLSTATE, so connection.ts classifies it like the server's own. */
function stateError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

/** Points a not-yet-connected client at `target` (a connectionString in the config wins over host/port). */
function aim(client: pg.Client, target: PgHost): void {
  const fields = client as unknown as {
    host: string;
    port: number;
    connectionParameters: { host: string; port: number };
  };
  fields.host = fields.connectionParameters.host = target.host;
  fields.port = fields.connectionParameters.port = target.port;
}

async function isReadOnly(client: pg.Client): Promise<boolean> {
  const { rows } = await client.query<{ transaction_read_only: string }>('SHOW transaction_read_only');
  return rows[0]?.transaction_read_only === 'on';
}

export class PrimarySelector {
  private current: PgHost | null = null;
  private probing: Promise<PgHost> | null = null;
  /** How many times the hosts were probed (for tests and debugging). */
  probes = 0;

  constructor(
    readonly hosts: readonly PgHost[],
    readonly attrs: SessionAttrs,
    /** The pool's client config (user, database, ssl, startup options) for probe connections. */
    private readonly config: pg.ClientConfig,
    private readonly timeoutMs: number,
  ) {}

  /** The host believed to be the primary (probing when there is none). */
  select(): Promise<PgHost> {
    if (this.current) return Promise.resolve(this.current);
    this.probing ??= this.probe().finally(() => (this.probing = null));
    return this.probing;
  }

  /** Forgets `host` as the primary: the next connection probes again. */
  forget(host: PgHost): void {
    if (this.current === host) this.current = null;
  }

  get primary(): PgHost | null {
    return this.current;
  }

  get checks(): boolean {
    return this.attrs === 'read-write';
  }

  /**
   * Probes every host at once and takes the first to answer that qualifies (for read-write: is
   * writable). Not the first in URL order: a primary whose machine died answers nothing (no RST),
   * and waiting for it would cost every connect its full timeout while the promoted standby is
   * ready. A healthy topology has one writable host, so the order only mattered for a split brain,
   * which no client can resolve anyway (docs/operations.md).
   */
  private async probe(): Promise<PgHost> {
    this.probes++;
    const reasons: string[] = [];
    const found = await new Promise<PgHost | null>((resolve) => {
      let pending = this.hosts.length;
      for (const host of this.hosts) {
        void this.check(host).then((outcome) => {
          if (outcome === 'ok') resolve(host);
          else reasons.push(`${host.host}:${host.port} ${outcome}`);
          if (--pending === 0) resolve(null);
        });
      }
    });
    if (found) {
      this.current = found;
      return found;
    }
    // 25006 when a server answered but none is writable (mid-failover: promotion pending), 08001 when none answered.
    const anyAnswered = reasons.some((r) => r.endsWith('read-only'));
    throw stateError(
      `no ${this.attrs === 'any' ? 'reachable' : 'writable'} PostgreSQL host (${reasons.join('; ')})`,
      anyAnswered ? READ_ONLY : '08001',
    );
  }

  private async check(host: PgHost): Promise<string> {
    const client = new pg.Client({
      ...this.config,
      connectionTimeoutMillis: this.timeoutMs,
      query_timeout: this.timeoutMs,
      application_name: 'dibs-probe',
    });
    client.on('error', () => {});
    aim(client, host);
    try {
      await client.connect();
      if (this.checks && (await isReadOnly(client))) return 'read-only';
      return 'ok';
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    } finally {
      client.end().catch(() => {});
    }
  }
}

/**
 * A pg.Client class (for pg.Pool's `Client` option and the lock listener) whose connections go to
 * the selector's primary, are checked after connecting, and tell the selector when that host
 * turned out read-only or unreachable.
 */
export function primaryClient(selector: PrimarySelector): typeof pg.Client {
  return class PrimaryClient extends pg.Client {
    override connect(): Promise<pg.Client>;
    override connect(callback: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): void;
    override connect(
      callback?: ((err: Error) => void) | ((err: null, c: pg.Client) => void),
    ): Promise<pg.Client> | undefined {
      const run = async (): Promise<pg.Client> => {
        const target = await selector.select();
        // the pool's connect timeout fired during the probe (it destroys the socket not yet connected)
        if ((this.connection as unknown as { stream: { destroyed: boolean } }).stream.destroyed)
          throw new Error('Connection terminated due to connection timeout');
        aim(this, target);
        // a read-only answer on this connection later (demoted under us): the next connection re-probes
        this.connection.on(
          'errorMessage',
          (message: { code?: string }) => message.code === READ_ONLY && selector.forget(target),
        );
        this.on('error', () => selector.forget(target));
        try {
          await super.connect();
        } catch (error) {
          selector.forget(target);
          throw error;
        }
        if (selector.checks && (await isReadOnly(this as pg.Client))) {
          selector.forget(target);
          await this.end().catch(() => {});
          throw stateError(
            `postgres: ${target.host}:${target.port} is read-only (a standby, or a demoted primary)`,
            READ_ONLY,
          );
        }
        return this;
      };
      if (!callback) return run();
      const done = callback as (err: Error | null, c?: pg.Client) => void;
      run().then(
        (client) => done(null, client),
        (error: Error) => done(error),
      );
      return undefined;
    }
  };
}
