/**
 * The service target: claims go to a running dibs service over HTTP, the way a browser or an
 * app backend would send them. Uses Node's built-in fetch (keep-alive connection pool).
 *
 * Contract used: POST /v1/pools, POST /v1/pools/:pool/codes (JSON), POST /v1/pools/:pool/claims,
 * GET /v1/pools/:pool, GET /v1/pools/:pool/audit, GET /v1/pools/:pool/export (CSV); sale mode:
 * POST /v1/sales, POST /v1/sales/:sale/claims, GET /v1/sales/:sale(/audit); lock mode:
 * POST /v1/locks/:key/acquire|release, GET /v1/locks/:key.
 */
import { parse } from 'csv-parse/sync';
import { DibsError, ERROR_CODES, type ErrorCode } from '../../core/errors.js';
import type { CodeStatus, ImportResult, PoolStats } from '../../core/types.js';
import { redact } from '../../backends/registry.js';
import type { AuditFinding, CodeState, LoadTarget } from '../types.js';
import type { ClaimAnswer, ClaimClient, ControlClient, WorkClient, WorkMode } from './target.js';
import type { PlannedClaim, SaleFinalStats } from '../types.js';

type UrlTarget = Extract<LoadTarget, { kind: 'url' }>;

const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** Codes per import request: small enough for any sane body limit, big enough to be quick. */
const IMPORT_BATCH = 5000;

class Http {
  readonly base: string;
  private readonly headers: Record<string, string>;
  readonly timeoutMs: number;

  constructor(target: UrlTarget) {
    this.base = target.url.replace(/\/+$/, '');
    this.headers = target.key ? { authorization: `Bearer ${target.key}` } : {};
    this.timeoutMs = target.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  }

  poolPath(pool: string, rest = ''): string {
    return `${this.base}/v1/pools/${encodeURIComponent(pool)}${rest}`;
  }

  salePath(sale: string, rest = ''): string {
    return `${this.base}/v1/sales/${encodeURIComponent(sale)}${rest}`;
  }

  lockPath(key: string, rest = ''): string {
    return `${this.base}/v1/locks/${encodeURIComponent(key)}${rest}`;
  }

  /** A work request: the answer's JSON body, or the error code as an answer (never throws). */
  async work(
    method: string,
    url: string,
    body: unknown,
    timeoutMs = this.timeoutMs,
  ): Promise<{ ok: true; status: number; body: Record<string, unknown> } | { ok: false; answer: ClaimAnswer }> {
    let res: Response;
    try {
      res = await this.send(method, url, body, timeoutMs);
    } catch (error) {
      return {
        ok: false,
        answer: {
          status: 'error',
          error: error instanceof Error && error.name === 'TimeoutError' ? 'timeout' : 'unavailable',
        },
      };
    }
    const parsed = (await res.json().catch(() => null)) as Record<string, unknown> | null;
    if (res.ok) return { ok: true, status: res.status, body: parsed ?? {} };
    return {
      ok: false,
      answer: {
        status: 'error',
        error: (parsed?.error as { code?: string } | undefined)?.code ?? `http_${res.status}`,
      },
    };
  }

  send(method: string, url: string, body?: unknown, timeoutMs = this.timeoutMs): Promise<Response> {
    return fetch(url, {
      method,
      headers: body === undefined ? this.headers : { ...this.headers, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(timeoutMs),
    });
  }

  /** A control request: 2xx → parsed body; anything else → a DibsError carrying the service's code. */
  async call<T>(method: string, url: string, body?: unknown, as: 'json' | 'text' = 'json'): Promise<T> {
    let res: Response;
    try {
      // Control reads (export of a big pool) may take longer than one claim.
      res = await this.send(method, url, body, Math.max(this.timeoutMs, 120_000));
    } catch (error) {
      throw new DibsError('unavailable', `${method} ${redact(url)} failed: ${describe(error)}`, {
        retriable: true,
        cause: error,
      });
    }
    if (res.ok) return (as === 'json' ? await res.json() : await res.text()) as T;
    const payload = (await res.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null;
    const code = payload?.error?.code;
    const known =
      code !== undefined && isErrorCode(code)
        ? code
        : res.status === 401
          ? 'unauthorized'
          : res.status >= 500
            ? 'unavailable'
            : 'invalid_input';
    throw new DibsError(
      known,
      `${method} ${redact(url)} answered ${res.status}${code ? ` ${code}` : ''}: ${payload?.error?.message ?? res.statusText}`,
    );
  }
}

const isErrorCode = (code: string): code is ErrorCode => Object.hasOwn(ERROR_CODES, code);

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return cause?.code ?? cause?.message ?? error.message;
  }
  return String(error);
}

export class HttpClaimClient implements ClaimClient {
  private readonly http: Http;
  constructor(target: UrlTarget) {
    this.http = new Http(target);
  }

  async claim(pool: string, claimant: string, idempotencyKey: string | undefined): Promise<ClaimAnswer> {
    let res: Response;
    try {
      res = await this.http.send(
        'POST',
        this.http.poolPath(pool, '/claims'),
        idempotencyKey === undefined ? { claimant } : { claimant, idempotencyKey },
      );
    } catch (error) {
      return {
        status: 'error',
        error: error instanceof Error && error.name === 'TimeoutError' ? 'timeout' : 'unavailable',
      };
    }
    let body: { status?: string; code?: string; held?: string[]; replayed?: boolean; error?: { code?: string } } | null;
    try {
      body = (await res.json()) as typeof body;
    } catch {
      body = null;
    }
    if (
      (res.status === 201 || res.status === 200) &&
      body &&
      (body.status === 'claimed' || body.status === 'already-held') &&
      typeof body.code === 'string'
    ) {
      return {
        status: body.status,
        code: body.code,
        held: Array.isArray(body.held) ? body.held : [body.code],
        replayed: body.replayed === true,
      };
    }
    return { status: 'error', error: body?.error?.code ?? `http_${res.status}` };
  }

  async close(): Promise<void> {}
}

/** Epoch ms with sub-ms precision, comparable between processes of one machine. */
const now = () => performance.timeOrigin + performance.now();

/** Sale buys and lock handoffs over HTTP (pool claims use HttpClaimClient). */
export function httpWorkClient(target: UrlTarget, mode: Exclude<WorkMode, { kind: 'pool' }>, name: string): WorkClient {
  const http = new Http(target);
  const close = async () => {};
  if (mode.kind === 'sale') {
    return {
      async run(op: PlannedClaim) {
        const r = await http.work('POST', http.salePath(name, '/claims'), {
          customer: op.claimant,
          quantity: mode.qty,
          ...(op.key !== undefined ? { idempotencyKey: op.key } : {}),
        });
        if (!r.ok)
          return r.answer.error === 'limit_reached' ? { status: 'already-held', error: 'limit_reached' } : r.answer;
        const order = r.body.order as { id: string; quantity: number };
        return { status: 'claimed', code: order.id, units: order.quantity, replayed: r.body.replayed === true };
      },
      close,
    };
  }
  return {
    async run(op: PlannedClaim) {
      const key = op.resource ?? name;
      // waiting for the lock is part of the call: allow the wait on top of the request timeout
      const acquired = await http.work(
        'POST',
        http.lockPath(key, '/acquire'),
        { ttlMs: 30_000 + mode.holdMs, waitMs: 120_000 },
        http.timeoutMs + 120_000,
      );
      if (!acquired.ok) return { ...acquired.answer, resource: key };
      const lease = acquired.body as { token: string; fence: number };
      const start = now();
      if (mode.holdMs > 0) await new Promise((resolve) => setTimeout(resolve, mode.holdMs));
      const end = now();
      const released = await http.work('POST', http.lockPath(key, '/release'), { token: lease.token });
      if (!released.ok) return { ...released.answer, resource: key };
      return { status: 'claimed', code: `${key}#${lease.fence}`, resource: key, fence: lease.fence, start, end };
    },
    close,
  };
}

export class HttpControlClient implements ControlClient {
  readonly backend = 'http';
  readonly address: string;
  private readonly http: Http;

  constructor(target: UrlTarget) {
    this.http = new Http(target);
    this.address = redact(this.http.base);
  }

  async createPool(name: string, perClaimantLimit: number): Promise<void> {
    await this.http.call('POST', `${this.http.base}/v1/pools`, { name, perClaimantLimit });
  }

  async importCodes(pool: string, codes: readonly string[]): Promise<ImportResult> {
    const total: ImportResult = { imported: 0, duplicates: 0, invalid: 0 };
    for (let i = 0; i < codes.length || i === 0; i += IMPORT_BATCH) {
      const r = await this.http.call<ImportResult>('POST', this.http.poolPath(pool, '/codes'), {
        codes: codes.slice(i, i + IMPORT_BATCH),
      });
      total.imported += r.imported;
      total.duplicates += r.duplicates;
      total.invalid += r.invalid;
    }
    return total;
  }

  async poolInfo(pool: string): Promise<{ perClaimantLimit: number; stats: PoolStats }> {
    const p = await this.http.call<{ perClaimantLimit: number; stats: PoolStats }>('GET', this.http.poolPath(pool));
    return { perClaimantLimit: p.perClaimantLimit, stats: p.stats };
  }

  async exportCodes(pool: string): Promise<CodeState[]> {
    const csv = await this.http.call<string>('GET', this.http.poolPath(pool, '/export'), undefined, 'text');
    const rows = parse(csv, { columns: true, skip_empty_lines: true, bom: true }) as Record<string, string>[];
    return rows.map((r) => ({
      code: unescapeFormula(r.code ?? ''),
      status: (r.status ?? 'free') as CodeStatus,
      claimant: r.claimant ? unescapeFormula(r.claimant) : null,
    }));
  }

  async audit(pool: string): Promise<AuditFinding[]> {
    const body = await this.http.call<{ violations: AuditFinding[] }>('GET', this.http.poolPath(pool, '/audit'));
    return body.violations;
  }

  async createSale(id: string, cap: number, perCustomerLimit: number): Promise<void> {
    await this.http.call('POST', `${this.http.base}/v1/sales`, {
      id,
      sku: id,
      startsAt: new Date(Date.now() - 1000).toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      cap,
      perCustomerLimit,
    });
  }

  async saleInfo(id: string): Promise<SaleFinalStats> {
    const sale = await this.http.call<{
      cap: number | null;
      stats: { sold: number; held: number; available: number | null };
    }>('GET', this.http.salePath(id));
    return { cap: sale.cap ?? 0, sold: sale.stats.sold, held: sale.stats.held, available: sale.stats.available ?? 0 };
  }

  async auditSale(id: string): Promise<AuditFinding[]> {
    return (await this.http.call<{ violations: AuditFinding[] }>('GET', this.http.salePath(id, '/audit'))).violations;
  }

  async lockHolders(key: string): Promise<number> {
    return (await this.http.call<{ holders: unknown[] }>('GET', this.http.lockPath(key))).holders.length;
  }

  async close(): Promise<void> {}
}

/** The export prefixes spreadsheet-formula cells with a quote (CSV injection); undo it to compare with answers. */
function unescapeFormula(cell: string): string {
  return /^'[=+\-@\t\r]/.test(cell) ? cell.slice(1) : cell;
}
