/**
 * Delivery channels. Each takes one outbox event and either resolves with a short detail for
 * the delivery log or throws a DeliveryError saying whether a retry can help.
 */
import type { Agent as HttpsAgent } from 'node:https';
import { createRequire } from 'node:module';
import type { Transporter } from 'nodemailer';
import type { DueEvent } from '../core/outbox.js';
import type { PushSubscription } from '../core/sales/types.js';
import { traceHeaders } from '../tracing/delivery.js';
import { sign, SIGNATURE_HEADER } from './signature.js';

// nodemailer and web-push are loaded when a channel that needs them is made (both are CommonJS, so
// synchronously): every `dibs serve` imports this module, and most configure neither SMTP nor VAPID —
// loading them for nothing cost ≈ 5–10 MB of RSS in every service process (and every worker).
const require = createRequire(import.meta.url);
const nodemailer = () => require('nodemailer') as typeof import('nodemailer');
const webpush = () => require('web-push') as typeof import('web-push');

export class DeliveryError extends Error {
  override readonly name = 'DeliveryError';
  /** `retryInMs`: when to try again, if the channel knows better than the dispatcher's backoff. */
  constructor(
    message: string,
    readonly retriable: boolean,
    readonly retryInMs?: number,
  ) {
    super(message);
  }
}

export interface Channel {
  deliver(event: DueEvent, to: unknown): Promise<string>;
}

/**
 * A destination of its own (a broker stream), beside the webhook endpoints: it gets every event
 * they get. `deliver` is called in the dispatcher's order (oldest first), synchronously one
 * after another; a destination that keeps order appends in that order.
 */
export interface Destination {
  readonly label: string;
  /** `lastAttempt`: a failure now dead-letters the event (the retry budget is spent). */
  deliver(event: DueEvent, lastAttempt: boolean): Promise<string>;
  close(): Promise<void>;
}

/** The JSON body every webhook receives: the event envelope, its payload under `data`. */
export function webhookBody(event: DueEvent): string {
  return JSON.stringify({
    id: event.id,
    type: event.type,
    idempotencyKey: event.idempotencyKey,
    createdAt: event.createdAt,
    data: event.payload,
  });
}

export class WebhookChannel implements Channel {
  constructor(private readonly options: { secret: string; timeoutMs?: number }) {}

  async deliver(event: DueEvent, to: unknown): Promise<string> {
    const url = String(to);
    const body = webhookBody(event);
    let response: Response;
    try {
      response = await fetch(url, {
        method: 'POST',
        // traceparent: the receiver's spans join this delivery's trace (when dibs traces)
        headers: {
          'content-type': 'application/json',
          'user-agent': 'dibs-webhooks/1',
          'idempotency-key': event.idempotencyKey,
          [SIGNATURE_HEADER]: sign(this.options.secret, body),
          ...traceHeaders(),
        },
        body,
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
      });
    } catch (error) {
      throw new DeliveryError(`POST ${url}: ${(error as Error).message}`, true);
    }
    await response.body?.cancel();
    // 410 Gone: the receiver says it will never want this; everything else non-2xx is worth a retry.
    if (response.status === 410) throw new DeliveryError(`POST ${url}: 410 Gone`, false);
    if (!response.ok) throw new DeliveryError(`POST ${url}: HTTP ${response.status}`, true);
    return `POST ${url}: HTTP ${response.status}`;
  }
}

export class EmailChannel implements Channel {
  private readonly transport: Transporter;

  /** `smtpUrl` like `smtp://user:pass@mail.example.com:587` (nodemailer's connection URL). */
  constructor(private readonly options: { smtpUrl: string; from: string }) {
    this.transport = nodemailer().createTransport(options.smtpUrl);
  }

  async deliver(event: DueEvent, to: unknown): Promise<string> {
    const { subject, text } = describe(event);
    try {
      const info = await this.transport.sendMail({
        from: this.options.from,
        to: String(to),
        subject,
        text,
        // The same event always yields the same Message-ID, so a redelivery can be recognised downstream.
        messageId: `<${Buffer.from(event.idempotencyKey).toString('base64url')}@dibs>`,
        headers: { 'X-Dibs-Event': event.type, 'X-Dibs-Idempotency-Key': event.idempotencyKey },
      });
      return `smtp: ${info.response}`;
    } catch (error) {
      const code = (error as { responseCode?: number }).responseCode;
      // 5xx SMTP replies are permanent (bad mailbox, rejected); the rest may pass later.
      throw new DeliveryError(`smtp: ${(error as Error).message}`, !(code !== undefined && code >= 500));
    }
  }

  close(): void {
    this.transport.close();
  }
}

export class WebPushChannel implements Channel {
  /** `agent`: an https.Agent for push services behind a private CA or proxy. */
  constructor(
    private readonly options: {
      vapid: { subject: string; publicKey: string; privateKey: string };
      ttlSec?: number;
      timeoutMs?: number;
      agent?: HttpsAgent;
    },
  ) {}

  async deliver(event: DueEvent, to: unknown): Promise<string> {
    const { subject, text } = describe(event);
    const payload = JSON.stringify({
      title: subject,
      body: text,
      type: event.type,
      idempotencyKey: event.idempotencyKey,
      data: event.payload,
    });
    try {
      const result = await webpush().sendNotification(to as PushSubscription, payload, {
        vapidDetails: this.options.vapid,
        TTL: this.options.ttlSec ?? 3600,
        timeout: this.options.timeoutMs ?? 10_000,
        ...(this.options.agent ? { agent: this.options.agent } : {}),
        headers: { Topic: Buffer.from(event.idempotencyKey).toString('base64url').slice(0, 32) },
      });
      return `web push: HTTP ${result.statusCode}`;
    } catch (error) {
      const status = (error as { statusCode?: number }).statusCode;
      // 404/410: the subscription is gone for good.
      throw new DeliveryError(
        `web push: ${status ? `HTTP ${status}` : (error as Error).message}`,
        !(status === 404 || status === 410),
      );
    }
  }
}

/** Human text for an event, used by email and push. */
export function describe(event: DueEvent): { subject: string; text: string } {
  const p = event.payload;
  switch (event.type) {
    case 'sale.live.notify':
      return {
        subject: `${String(p.sku)} is on sale now`,
        text: `The sale of ${String(p.sku)} you asked about is live until ${String(p.endsAt)}.`,
      };
    case 'pool.low_stock':
      return {
        subject: `Pool ${String(p.pool)} is running low`,
        text: `Only ${String(p.free)} codes left (threshold ${String(p.threshold)}).`,
      };
    default:
      return { subject: `dibs: ${event.type}`, text: JSON.stringify(p) };
  }
}
