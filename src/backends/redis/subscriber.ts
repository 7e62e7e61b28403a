/**
 * Wake-on-release for Redis: one dedicated subscriber connection per backend instance (a
 * duplicate of the command client, created on the first subscription) listens on the prefix's
 * release channel and dispatches each message (the lock key) to this process' waiters of that
 * key. ioredis re-subscribes after a reconnect; releases published while it was down are missed,
 * which the waiters' safety-net poll covers. Works on a Cluster too: classic PUBLISH reaches
 * every node, so subscribing on any one node hears all releases.
 */
import { EventEmitter } from 'node:events';
import { Cluster } from 'ioredis';
import type { RedisClient } from './scripts.js';

export class ReleaseSubscriber {
  private readonly waiters = new EventEmitter().setMaxListeners(0);
  private connection: RedisClient | null = null;
  private closed = false;

  constructor(
    private readonly client: RedisClient,
    readonly channel: string,
  ) {}

  on(key: string, listener: () => void): () => void {
    this.waiters.on(key, listener);
    this.ensure();
    return () => this.waiters.off(key, listener);
  }

  /** Subscribes now (optional; `on` does it lazily). Resolves once SUBSCRIBE was answered or failed. */
  async start(): Promise<void> {
    await this.ensure();
  }

  async close(): Promise<void> {
    this.closed = true;
    const connection = this.connection;
    this.connection = null;
    if (!connection) return;
    await connection.quit().catch(() => {});
    connection.disconnect(); // as in RedisBackend.close: a Sentinel duplicate's detector stays until disconnect()
  }

  private subscribed: Promise<void> | null = null;

  private ensure(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.subscribed) return this.subscribed;
    // Neither a command timeout nor a retry limit on this connection: after a reconnect ioredis
    // re-sends SUBSCRIBE on its own and never handles that reply, so a re-subscribe that timed out
    // (a stall while reconnecting) or was flushed after too many reconnect attempts was an unhandled
    // rejection that ended the process — both found by the FAULTS_LONG soak. A subscriber waits by
    // design; while it is down, waiters only fall back to their safety-net poll.
    const patient = { commandTimeout: undefined, maxRetriesPerRequest: null };
    const connection: RedisClient =
      this.client instanceof Cluster
        ? this.client.duplicate(undefined, { redisOptions: { ...this.client.options.redisOptions, ...patient } })
        : this.client.duplicate(patient);
    this.connection = connection;
    connection.on('error', () => {}); // reconnects by itself; waiters poll meanwhile
    connection.on('message', (channel: string, key: string) => {
      if (channel === this.channel) this.waiters.emit(key);
    });
    const subscribed = connection.subscribe(this.channel).then(
      () => undefined,
      () => undefined,
    );
    this.subscribed = subscribed;
    return subscribed;
  }
}
