/**
 * Burn rate and time to empty for pools and sales. Pure functions over counts the store reads in
 * one step: units taken within the last 1, 5 and 15 minutes (by the store's clock) and the units
 * still available (for a sale: cap − sold − active holds, so held units count as gone).
 *
 * The estimate uses the SHORTEST window with enough events to be meaningful (a flash sale's pace
 * changes by the minute), falling back to longer windows when traffic is thin.
 */
export const FORECAST_WINDOWS = [
  { label: '1m', ms: 60_000 },
  { label: '5m', ms: 300_000 },
  { label: '15m', ms: 900_000 },
] as const;
export type WindowLabel = (typeof FORECAST_WINDOWS)[number]['label'];

/** Fewer events than this in a window make its rate too noisy to extrapolate from. */
export const MIN_EVENTS = 10;

export interface Forecast {
  kind: 'pool' | 'sale';
  subject: string;
  /** Units still available now; null for an unlimited sale. */
  remaining: number | null;
  /** Units taken per minute over each window. */
  perMinute: Record<WindowLabel, number>;
  /** The window the estimate is based on; null when nothing was taken in 15 minutes. */
  basis: WindowLabel | null;
  /** Null when the rate is zero (never empties at this pace) — 0 when already empty. */
  timeToEmptyMs: number | null;
  emptyAt: string | null;
  /** Store time of the reading. */
  at: string;
}

/**
 * `windows[i]`: units taken in FORECAST_WINDOWS[i] and how long that window has really been
 * active — from its first event (or its start) until now. A sale that opened 20 s ago has a 20 s
 * "last minute", not a 60 s one; dividing by the full window would understate its pace threefold.
 */
export interface WindowCount {
  taken: number;
  /** ms from the first event inside the window until now; ignored when `taken` is 0. */
  spanMs: number;
}

/** Rates are never computed over less than this, so a burst of two claims in 5 ms is not 24,000/min. */
const MIN_SPAN_MS = 1000;

export function forecastFrom(input: {
  kind: Forecast['kind'];
  subject: string;
  windows: readonly WindowCount[];
  remaining: number | null;
  at: string;
}): Forecast {
  const perMsOf = (i: number) => {
    const w = input.windows[i];
    return w && w.taken > 0 ? w.taken / Math.min(FORECAST_WINDOWS[i]!.ms, Math.max(MIN_SPAN_MS, w.spanMs)) : 0;
  };
  const perMinute = Object.fromEntries(FORECAST_WINDOWS.map((w, i) => [w.label, round(perMsOf(i) * 60_000)])) as Record<
    WindowLabel,
    number
  >;
  const index = FORECAST_WINDOWS.findIndex((_, i) => (input.windows[i]?.taken ?? 0) >= MIN_EVENTS);
  // one event is no pace at all; two give at least an interval
  const fallback = FORECAST_WINDOWS.findIndex((_, i) => (input.windows[i]?.taken ?? 0) >= 2);
  const chosen = index >= 0 ? index : fallback;
  const basis = chosen >= 0 ? FORECAST_WINDOWS[chosen]!.label : null;
  const perMs = chosen >= 0 ? perMsOf(chosen) : 0;
  const timeToEmptyMs =
    input.remaining === null ? null : input.remaining <= 0 ? 0 : perMs > 0 ? Math.round(input.remaining / perMs) : null;
  return {
    kind: input.kind,
    subject: input.subject,
    remaining: input.remaining,
    perMinute,
    basis,
    timeToEmptyMs,
    emptyAt: timeToEmptyMs === null ? null : new Date(Date.parse(input.at) + timeToEmptyMs).toISOString(),
    at: input.at,
  };
}

/**
 * The predicted-empty alert as a state machine: it fires once when the predicted time to empty
 * drops to `withinMs` or below while armed, and re-arms only once the prediction is comfortably
 * above it again (×1.5, so a pace that hovers at the edge does not page anyone twice).
 */
export function emptySoonStep(
  armed: boolean,
  timeToEmptyMs: number | null,
  withinMs: number,
): { fire: boolean; armed: boolean } {
  const soon = timeToEmptyMs !== null && timeToEmptyMs <= withinMs;
  if (armed && soon) return { fire: true, armed: false };
  if (!armed && (timeToEmptyMs === null || timeToEmptyMs > withinMs * 1.5)) return { fire: false, armed: true };
  return { fire: false, armed };
}

/** The store side: counts and the alert, each in one atomic step. */
export interface ForecastBackend {
  /** Units taken in each of FORECAST_WINDOWS and the units available, read together. Throws `not_found`. */
  read(kind: Forecast['kind'], subject: string): Promise<Forecast>;
  /** Watches a pool/sale for "empty within `withinMs`" (null stops watching). */
  watch(kind: Forecast['kind'], subject: string, withinMs: number | null): Promise<void>;
  /**
   * For every watch: reads the forecast and advances its alert in ONE step, recording one
   * `<kind>.empty_soon` outbox event per crossing. Returns the alerts that fired.
   */
  checkWatches(): Promise<Forecast[]>;
}

const round = (n: number) => Math.round(n * 100) / 100;
