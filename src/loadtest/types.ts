/**
 * The vocabulary of `dibs loadtest`: what a run is asked to do, what each simulated click
 * was answered, and the report that comes out. Kept free of runtime code so the worker
 * process, the coordinator, the CLI and the test harness can all share it.
 */
import type { CodeStatus, PoolStats } from '../core/types.js';

/** What is loaded: a coupon pool (claims), a flash sale (buys) or locks (acquire, hold, release). */
export type LoadMode = 'pool' | 'sale' | 'locks';
export const LOAD_MODES: readonly LoadMode[] = ['pool', 'sale', 'locks'];

/** How the claimants' first clicks are spread over time. */
export type ArrivalPattern = 'burst' | 'uniform' | 'ramp';
export const ARRIVAL_PATTERNS: readonly ArrivalPattern[] = ['burst', 'uniform', 'ramp'];

/** Where the load goes: the library in-process (one `openDibs` per worker) or a running service. */
export type LoadTarget =
  | {
      kind: 'store';
      /** Store URL, e.g. `sqlite:./dibs.db`, `postgres://…`, `redis://…`. */
      store: string;
      storeOptions?: Record<string, unknown>;
      /**
       * A module exporting `openDibs(store, options)` used instead of the built-in one, in the
       * coordinator and in every worker. It lets you load-test your own wrapper around dibs
       * (and lets the test suite prove that the checker catches a store that double-issues).
       */
      storeModule?: string;
    }
  | {
      kind: 'url';
      /** Base URL of a dibs service, e.g. `http://127.0.0.1:3000`. */
      url: string;
      /** Sent as `Authorization: Bearer <key>`. */
      key?: string;
      /** A request without an answer after this long counts as a `timeout` error (default 30 s). */
      requestTimeoutMs?: number;
    };

/**
 * A load test. Only `target` is required. `mode` picks what is loaded (default `pool`); the
 * claimant, arrival and process options mean the same in every mode.
 */
export interface LoadtestOptions {
  target: LoadTarget;
  /** `pool` (default): claims from a coupon pool; `sale`: buys from a flash sale; `locks`: lease handoffs. */
  mode?: LoadMode;
  /** Sale mode: units for sale (default 5,000). */
  cap?: number;
  /** Sale mode: units each customer buys in one request (default 1). */
  qty?: number;
  /** Lock mode: how many lock keys the claimants spread over (default 8). */
  keys?: number;
  /** Lock mode: how long each holder keeps its lease, ms (default 2). */
  holdMs?: number;
  /** Worker OS processes, like serverless instances (default 4). */
  processes?: number;
  /** Distinct simulated users (default 10,000). */
  claimants?: number;
  /** Codes to put in a fresh pool (default 5,000). Ignored when `pool` names an existing pool. */
  codes?: number;
  /** An existing pool to claim from instead of creating a fresh one; nobody else should use it during the run. */
  pool?: string;
  /** `burst`: everyone at once; `uniform`: evenly over `durationSec`; `ramp`: arrivals grow linearly over `durationSec`. */
  arrival?: ArrivalPattern;
  /** Window over which `uniform` and `ramp` arrivals are spread (default 30). */
  durationSec?: number;
  /** Fraction of claimants that click twice (no key) or retry with the same idempotency key (default 0.1). */
  repeatRatio?: number;
  /** Per-claimant limit of a fresh pool (default 1). Each claimant asks for this many codes. */
  limit?: number;
  /** Claims in flight per worker process (default 16). */
  concurrency?: number;
  /** Everything (workers included) is stopped after this long (default: window + 120 s). */
  timeoutSec?: number;
  /** Seed of the deterministic plan (who is in which process, who repeats). */
  seed?: number;
}

/** One request a worker will send. */
export interface PlannedClaim {
  claimant: string;
  /** Idempotency key; the same key sent twice is a client retry. */
  key?: string;
  /** Which request of this claimant it is (0 = first); a double click has its own attempt number. */
  attempt: number;
  /** When to send it, in ms after the start signal. */
  at: number;
  /** Lock mode: the lock key this request contends for. */
  resource?: string;
}

/** What a client was told. Shape-compatible with the storm harness's outcomes. */
export interface ClaimOutcome {
  claimant: string;
  key?: string;
  attempt: number;
  status: 'claimed' | 'already-held' | 'error';
  code?: string;
  held?: string[];
  replayed?: boolean;
  /** Stable error code (`sold_out`, `unavailable`, `timeout`, `http_502`, `exception`, …). */
  error?: string;
  /** For an `exception`: what was thrown. */
  detail?: string;
  /** Latency of the call in ms. */
  ms: number;
  /** Sale mode: units in the acknowledged order (`code` is the order id). */
  units?: number;
  /** Lock mode: the key, the lease's fence, and the critical section in epoch ms (comparable across processes). */
  resource?: string;
  fence?: number;
  start?: number;
  end?: number;
}

/** A loadtest outcome also says which process sent it and when (ms after the start signal). */
export interface TimedOutcome extends ClaimOutcome {
  process: number;
  at: number;
  sent: number;
}

/** One row of the final state of the pool, as exported. */
export interface CodeState {
  code: string;
  status: CodeStatus;
  claimant: string | null;
}

/** One finding of the backend's own audit (`dibs audit`). */
export interface AuditFinding {
  invariant?: string;
  message: string;
}

/** I1/I2/I4/I5 invariants; `answers` malformed answers; `errors` unexpected errors; `numbers` supply vs demand;
 *  `audit` the backend's own audit; `run` worker processes that crashed or timed out. */
export type CheckId = 'I1' | 'I2' | 'I3' | 'I4' | 'I5' | 'I6' | 'answers' | 'errors' | 'numbers' | 'audit' | 'run';

export interface RunViolation {
  check: CheckId;
  message: string;
}

export interface Progress {
  elapsedSec: number;
  planned: number;
  answered: number;
  /** Answers per second over roughly the last second. */
  perSecond: number;
  claimed: number;
  alreadyHeld: number;
  soldOut: number;
  errors: number;
  /** p99 latency of every answer so far, ms. */
  p99Ms: number;
}

export type Phase = 'setup' | 'import' | 'spawn' | 'run' | 'verify' | 'done';

export interface LoadtestHooks {
  onProgress?: (progress: Progress) => void;
  onPhase?: (phase: Phase, message: string) => void;
  /** How often `onProgress` fires (default 250 ms). */
  progressIntervalMs?: number;
}

export interface LatencySummary {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export interface TimelineBucket {
  /** Bucket start, seconds after the start signal (by send time). */
  t: number;
  answered: number;
  p50: number;
  p99: number;
  claimed: number;
  alreadyHeld: number;
  soldOut: number;
  errors: number;
}

interface ScenarioBase {
  processes: number;
  claimants: number;
  arrival: ArrivalPattern;
  durationSec: number;
  repeatRatio: number;
  concurrency: number;
  /** Pass as `seed` / `--seed` to replay the same plan. */
  seed: number;
}

export interface PoolScenario extends ScenarioBase {
  mode: 'pool';
  claimsPerClaimant: number;
  perClaimantLimit: number;
  /** Free codes when the run started. */
  codes: number;
}

export interface SaleScenario extends ScenarioBase {
  mode: 'sale';
  /** Units of the sale. */
  cap: number;
  /** Units per buy. */
  qty: number;
  perCustomerLimit: number;
}

export interface LockScenario extends ScenarioBase {
  mode: 'locks';
  keys: number;
  holdMs: number;
}

interface ReportBase {
  version: 1;
  ok: boolean;
  startedAt: string;
  target: { kind: 'store' | 'url'; address: string; backend: string };
  /** The pool, the sale id, or the prefix of the lock keys. */
  pool: string;
  /** Whether the pool/sale was created for this run. */
  poolCreated: boolean;
  /** Where it ran: load numbers mean little without the machine and how busy it was. */
  environment: { node: string; platform: string; cpus: number; loadAverage: number[] };
  requests: { planned: number; answered: number };
  /** Seconds from the start signal to the last answer. */
  wallSeconds: number;
  /** Answers per second over the wall time. */
  throughput: number;
  /** Duration of each call (request to answer), ms. */
  latencyMs: LatencySummary;
  /**
   * From the moment a user "clicked" (planned arrival) to the answer, ms: the call plus any wait
   * for a free slot in its process (`concurrency`). What a user of a saturated instance feels.
   */
  arrivalToAnswerMs: LatencySummary;
  /** `claimed`: codes claimed, orders placed, or leases held; `alreadyHeld`: at the limit. */
  outcomes: { claimed: number; alreadyHeld: number; replayed: number; soldOut: number; errors: Record<string, number> };
  /** "The numbers add up": what exactly-once demands versus what happened (units, for a sale). */
  numbers: {
    demand: number;
    supply: number;
    expectedCodesGiven: number;
    codesGiven: number;
    winners: number;
    losers: number;
  };
  audit: AuditFinding[];
  violations: RunViolation[];
  timeline: { bucketSec: number; buckets: TimelineBucket[] };
}

export interface PoolLoadtestReport extends ReportBase {
  scenario: PoolScenario;
  finalStats: PoolStats;
}

export interface SaleFinalStats {
  cap: number;
  sold: number;
  held: number;
  available: number;
}

export interface SaleLoadtestReport extends ReportBase {
  scenario: SaleScenario;
  finalStats: SaleFinalStats;
}

export interface LockFinalStats {
  acquisitions: number;
  /** Longest stretch, ms, that any key was held by overlapping holders (0 when exclusive). */
  overlapMs: number;
  /** Critical sections of different keys that overlapped in time: the parallelism across keys. */
  crossKeyOverlaps: number;
  liveHolders: number;
}

export interface LockLoadtestReport extends ReportBase {
  scenario: LockScenario;
  finalStats: LockFinalStats;
}

export type LoadtestReport = PoolLoadtestReport | SaleLoadtestReport | LockLoadtestReport;
