/**
 * Per-endpoint delivery outcomes, counted in memory by this process's dispatcher: the store logs
 * each event's attempts, not which endpoint failed, so a per-endpoint success rate is measured
 * here, like the dashboard's claim rate. It starts when the service starts; each instance counts
 * the deliveries it made.
 */
export interface EndpointStat {
  /** A webhook URL, a destination's label (a broker stream) or a channel (email, web push). */
  endpoint: string;
  ok: number;
  failed: number;
  lastOkAt: string | null;
  lastFailureAt: string | null;
  lastError: string | null;
}

/** Endpoints kept at most (webhook URLs and destinations come from configuration: a guard only). */
const MAX_ENDPOINTS = 200;

export class DeliveryStats {
  readonly since = new Date().toISOString();
  private readonly endpoints = new Map<string, EndpointStat>();

  record(target: string, ok: boolean, error?: string): void {
    const endpoint = withoutCredentials(target);
    let stat = this.endpoints.get(endpoint);
    if (!stat) {
      if (this.endpoints.size >= MAX_ENDPOINTS) return;
      stat = { endpoint, ok: 0, failed: 0, lastOkAt: null, lastFailureAt: null, lastError: null };
      this.endpoints.set(endpoint, stat);
    }
    const at = new Date().toISOString();
    if (ok) {
      stat.ok++;
      stat.lastOkAt = at;
    } else {
      stat.failed++;
      stat.lastFailureAt = at;
      stat.lastError = error ?? null;
    }
  }

  list(): EndpointStat[] {
    return [...this.endpoints.values()].map((s) => ({ ...s })).sort((a, b) => (a.endpoint < b.endpoint ? -1 : 1));
  }
}

/** A URL's user and password never reach the page. */
function withoutCredentials(target: string): string {
  if (!URL.canParse(target)) return target;
  const url = new URL(target);
  if (url.username === '' && url.password === '') return target;
  url.username = '';
  url.password = '';
  return url.toString();
}
