/**
 * Delivers outbox events at least once. Events that name a `channel` and a `to` (wishlist
 * notifications) go to that one destination; every other event (low stock, sale live, …) goes to
 * the configured webhook endpoints. Each batch is leased in the store first, so any number of
 * dispatchers — in this process or others — can run side by side without delivering the same
 * event concurrently. Failures are retried with exponential backoff and jitter until
 * `maxAttempts`, then dead-lettered; every attempt is logged in the store. Events without a
 * destination of their own also go to the broker `destinations`, handed over in batch order.
 */
import type { DueEvent, OutboxBackend } from '../core/outbox.js';
import { inDeliverySpan, noteDeliveryFailure } from '../tracing/delivery.js';
import { DeliveryError, type Channel, type Destination } from './channels.js';
import type { DeliveryStats } from './delivery-stats.js';

export interface DispatcherOptions {
  outbox: OutboxBackend;
  channels?: { email?: Channel; webPush?: Channel; webhook?: Channel };
  /** Endpoints for events without their own destination. */
  webhookUrls?: string[];
  /** Broker streams that get the same events as the webhook endpoints (notify/redis-stream.ts). */
  destinations?: Destination[];
  batchSize?: number;
  leaseMs?: number;
  maxAttempts?: number;
  backoff?: { baseMs: number; maxMs: number };
  onError?: (error: unknown) => void;
  /** Counts each endpoint's successes and failures (the dashboard's per-endpoint success rate). */
  stats?: DeliveryStats;
}

export interface DispatchResult {
  delivered: number;
  retried: number;
  dead: number;
}

export class OutboxDispatcher {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<DispatchResult> | null = null;
  private stopped = false;

  constructor(private readonly options: DispatcherOptions) {}

  /** Leases one batch of due events and delivers it. */
  async runOnce(): Promise<DispatchResult> {
    const result: DispatchResult = { delivered: 0, retried: 0, dead: 0 };
    const events = await this.options.outbox.claimDue(this.options.batchSize ?? 50, this.options.leaseMs ?? 60_000);
    await Promise.all(
      events.map(async (event) => {
        const outcome = await this.deliver(event);
        result[outcome]++;
      }),
    );
    return result;
  }

  /** Runs batches until nothing is due (bounded by `maxBatches`). */
  async drain(maxBatches = 1000): Promise<DispatchResult> {
    const total: DispatchResult = { delivered: 0, retried: 0, dead: 0 };
    for (let i = 0; i < maxBatches; i++) {
      const r = await this.runOnce();
      total.delivered += r.delivered;
      total.retried += r.retried;
      total.dead += r.dead;
      if (r.delivered + r.retried + r.dead === 0) break;
    }
    return total;
  }

  /** Polls every `intervalMs` on an unref'd timer (it never keeps the process alive by itself). */
  start(intervalMs = 1000): void {
    this.stopped = false;
    const tick = () => {
      if (this.stopped) return;
      this.running = this.drain(20).catch((error) => {
        this.options.onError?.(error);
        return { delivered: 0, retried: 0, dead: 0 };
      });
      void this.running.finally(() => {
        this.running = null;
        if (!this.stopped) this.timer = setTimeout(tick, intervalMs).unref();
      });
    };
    tick();
  }

  /** Stops polling and waits for the batch in flight, so a graceful shutdown loses nothing. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  private deliver(event: DueEvent): Promise<keyof DispatchResult> {
    return inDeliverySpan(event, () => this.attempt(event)) as Promise<keyof DispatchResult>;
  }

  private async attempt(event: DueEvent): Promise<keyof DispatchResult> {
    try {
      const detail = await this.send(event);
      await this.options.outbox.markDelivered(event.id, detail);
      return 'delivered';
    } catch (error) {
      noteDeliveryFailure(error);
      const retriable = !(error instanceof DeliveryError) || error.retriable;
      const attempt = event.attempts + 1;
      const give = !retriable || attempt >= (this.options.maxAttempts ?? 10);
      const hint = error instanceof DeliveryError ? error.retryInMs : undefined;
      await this.options.outbox.markFailed(
        event.id,
        (error as Error).message,
        give ? null : (hint ?? this.backoff(attempt)),
      );
      return give ? 'dead' : 'retried';
    }
  }

  private async send(event: DueEvent): Promise<string> {
    const { channel, to } = event.payload as {
      channel?: keyof NonNullable<DispatcherOptions['channels']>;
      to?: unknown;
    };
    if (channel !== undefined) {
      const handler = this.options.channels?.[channel];
      if (!handler) throw new DeliveryError(`no ${channel} channel is configured`, true);
      return this.counted(channel, () => handler.deliver(event, to));
    }
    const urls = this.options.webhookUrls ?? [];
    const webhook = urls.length > 0 ? this.options.channels?.webhook : undefined;
    const destinations = this.options.destinations ?? [];
    if (!webhook && destinations.length === 0) return 'no webhook endpoint configured';
    // Destinations first, before anything is awaited: they get the events in batch order.
    const lastAttempt = event.attempts + 1 >= (this.options.maxAttempts ?? 10);
    const appended = Promise.allSettled(
      destinations.map((d) => this.counted(d.label, () => d.deliver(event, lastAttempt))),
    );
    // At least once to every endpoint: a retry re-sends to all; receivers dedupe on the key
    // (streams append a redelivered event only once).
    const details: string[] = [];
    const failures: unknown[] = [];
    try {
      if (webhook) for (const url of urls) details.push(await this.counted(url, () => webhook.deliver(event, url)));
    } catch (error) {
      failures.push(error);
    }
    for (const r of await appended) {
      if (r.status === 'fulfilled') details.push(r.value);
      else failures.push(r.reason);
    }
    if (failures.length > 0) throw worstOf(failures);
    return details.join('; ');
  }

  private async counted(endpoint: string, send: () => Promise<string>): Promise<string> {
    try {
      const detail = await send();
      this.options.stats?.record(endpoint, true);
      return detail;
    } catch (error) {
      this.options.stats?.record(endpoint, false, (error as Error).message);
      throw error;
    }
  }

  private backoff(attempt: number): number {
    const { baseMs, maxMs } = this.options.backoff ?? { baseMs: 1000, maxMs: 15 * 60_000 };
    const ceiling = Math.min(maxMs, baseMs * 2 ** (attempt - 1));
    return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
  }
}

/**
 * One attempt's failures as one: retriable only if each is, due when the latest hint says (a
 * stream holding its events back), with every message for the delivery log.
 */
function worstOf(failures: unknown[]): unknown {
  if (failures.length === 1) return failures[0];
  const retriable = failures.every((f) => !(f instanceof DeliveryError) || f.retriable);
  const hints = failures.flatMap((f) => (f instanceof DeliveryError && f.retryInMs !== undefined ? [f.retryInMs] : []));
  return new DeliveryError(
    failures.map((f) => (f as Error).message).join('; '),
    retriable,
    hints.length > 0 ? Math.max(...hints) : undefined,
  );
}
