/**
 * PostgreSQL with its WAL on a full disk: a test-owned server (test/support/pg-cluster.ts) whose
 * pg_wal sits on a small tmpfs, filled completely in the middle of a multi-process claim storm
 * while the HTTP service answers claims on the same pool.
 *
 * What PostgreSQL does: WAL goes into segment files that already exist until it must start a new
 * one (1 MB segments, no recycling, so that comes soon); creating it fails with ENOSPC inside a
 * critical section — PANIC, every backend is terminated, and the crash recovery that follows
 * cannot write its end-of-recovery record either, so the server shuts itself down ("shutting down
 * due to startup process failure"). It does not come back by itself: its supervisor restarts it
 * once space is freed (here the test), and recovery replays every committed transaction.
 *
 * What dibs must do: every step while the disk is full or the server is down or recovering is
 * `unavailable` (503 + Retry-After through the service, never a 500), nothing acknowledged is lost,
 * and the same library handle and the same service answer again by themselves once the server is
 * back — no reopen, no service restart.
 *
 * Then the same for flash-sale buys (test/support/full-disk-sales.ts): a paced 3-process buy storm
 * while the WAL disk fills again, judged by the client ledger (every acknowledged order stored,
 * keyed retries replay or buy once, sold ≤ cap, audit clean), and a wave of buys after
 * the restart that sells out exactly the cap without a failure.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { openDibs, type Dibs } from '../../src/index.js';
import { buildServer } from '../../src/service/app.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { LONG } from '../support/faults.js';
import { buyStormOnFullDisk } from '../support/full-disk-sales.js';
import { requirePgBinaries, startPgServer, type OwnedPgServer } from '../support/pg-cluster.js';
import { assertStormInvariants, runClaimStorm, type StormOutcome } from '../support/storm.js';
import { diskFault, smallDiskForSuite, supervisedPg, tmpfsUnavailable } from '../support/full-disk.js';

const skip = tmpfsUnavailable() ?? requirePgBinaries();

describe('PostgreSQL with its WAL on a full disk', { skip: skip || false, timeout: 300_000 }, () => {
  const smallDisk = smallDiskForSuite(24);
  let server: OwnedPgServer;
  let dibs: Dibs;
  let app: FastifyInstance;
  let auth: string;
  let store: string;
  before(async () => {
    server = await startPgServer({
      waldir: `${smallDisk().dir}/pg_wal`,
      walSegmentMb: 1,
      // a new segment file at every switch (no renaming of old ones): the full disk is met within 1 MB of WAL
      conf: ['wal_recycle = off', 'min_wal_size = 4MB', 'max_wal_size = 8MB', 'fsync = off'],
    });
    store = `${server.url()}?schema=disk&poolSize=4&queryTimeoutMs=3000&connectTimeoutMs=2000`;
    dibs = await openDibs(store);
    app = buildServer({ dibs, rateLimit: false });
    await app.ready();
    auth = `Bearer ${(await createApiKey(dibs.backend.service, { tenant: 'default', name: 'disk test', scopes: ['pools:read', 'pools:claim'] })).key}`;
  });
  after(async () => {
    await app?.close();
    await dibs?.close();
    await server?.stop();
  });

  // PostgreSQL stops by itself once it needs a new WAL segment; freed 1.5 s after that
  const walFault = () =>
    diskFault(smallDisk(), {
      afterMs: 300,
      untilDown: { store: supervisedPg(server), maxMs: 20_000 },
      fullMs: 1500,
    });

  const httpClaim = async (claimant: string) => {
    const res = await app.inject({
      method: 'POST',
      url: '/v1/pools/disk/claims',
      headers: { authorization: auth, 'content-type': 'application/json' },
      payload: JSON.stringify({ claimant }),
    });
    return {
      status: res.statusCode,
      retryAfter: res.headers['retry-after'],
      body: res.json() as { status?: string; code?: string; error?: { code: string } },
    };
  };

  it('a claim storm (3 processes + the service) while the WAL disk fills: only `unavailable` / 503 + Retry-After, nothing acknowledged lost, back by itself after the restart', async () => {
    // more codes than claims: the storm keeps writing WAL until the server stops
    const codes = LONG ? 40_000 : 8000;
    await dibs.pools.create({ name: 'disk' });
    await dibs.pools.importCodes(
      'disk',
      Array.from({ length: codes }, (_, i) => `W-${i}`),
    );

    let fault: Promise<string> = Promise.resolve('');
    let stormDone = false;
    const start = () => {
      fault = walFault();
    };
    // The service answers claims on the same pool all along.
    const http: Array<{ claimant: string; status: number; retryAfter: unknown; code?: string; error?: string }> = [];
    const serving = (async () => {
      for (let i = 0; !stormDone; i++) {
        const claimant = `http-${i}`;
        const res = await httpClaim(claimant);
        http.push({
          claimant,
          status: res.status,
          retryAfter: res.retryAfter,
          code: res.body.code,
          error: res.body.error?.code,
        });
        await sleep(20);
      }
    })();
    let outcomes: StormOutcome[];
    let faultLog = '';
    try {
      outcomes = await runClaimStorm({
        store,
        pool: 'disk',
        processes: 3,
        claimants: LONG ? 30_000 : 4500,
        paceMs: 2,
        concurrency: 4,
        timeoutMs: 240_000,
        onStart: start,
      });
    } finally {
      faultLog = await fault;
      stormDone = true;
      await serving;
    }
    const errors = outcomes.filter((o) => o.status === 'error' && o.error !== 'sold_out');
    const kinds = [...new Set(errors.map((o) => o.error))];
    const statuses = [...new Set(http.map((h) => h.status))].sort();
    const unavailableHttp = http.filter((h) => h.status === 503);
    // PostgreSQL's own account, for the record: the PANIC, the failed recovery, the shutdown
    process.stderr.write(
      `${server
        .log()
        .split('\n')
        .filter((l) => /PANIC|could not write|shutting down|system is shut down|ready to accept/.test(l))
        .join('\n')}\n`,
    );
    console.log(
      `[disk] postgres WAL: ${faultLog}; library answers ${outcomes.length}, failed ${errors.length} (${kinds.join(', ') || 'none'}); service answers ${http.length}: ${statuses.map((s) => `${s} ×${http.filter((h) => h.status === s).length}`).join(', ')}`,
    );
    assert.deepEqual(
      kinds.filter((e) => e !== 'unavailable'),
      [],
      'every failure of the library is the retriable unavailable',
    );
    assert.deepEqual(
      statuses.filter((s) => s !== 201 && s !== 503),
      [],
      `the service answers 201 or 503, never a 500: ${JSON.stringify(http.filter((h) => h.status !== 201 && h.status !== 503).slice(0, 3))}`,
    );
    assert.ok(
      unavailableHttp.every((h) => h.error === 'unavailable' && h.retryAfter !== undefined),
      'every 503 is `unavailable` with Retry-After',
    );
    assert.ok(errors.length + unavailableHttp.length > 0, 'the full disk was felt by the clients');

    // Back by itself: the same handle and the same service, nothing reopened (PostgreSQL restarted
    // by its supervisor whenever it stopped).
    const deadline = Date.now() + 30_000;
    let again: Awaited<ReturnType<typeof httpClaim>>;
    for (;;) {
      if (!server.alive()) await server.restart();
      again = await httpClaim('after-the-disk-was-freed');
      if (again.status === 201 || Date.now() > deadline) break;
      await sleep(200);
    }
    assert.equal(again.status, 201, `the service claims again once PostgreSQL is back: ${JSON.stringify(again.body)}`);
    const libraryAfter = await dibs.pools.claim('disk', 'library-after');
    assert.equal(libraryAfter.status, 'claimed', 'the library handle claims again');

    // The ledger: library and service answers together (an HTTP 201 is an acknowledged claim).
    const fromHttp: StormOutcome[] = [
      ...http,
      { claimant: 'after-the-disk-was-freed', status: 201, code: again.body.code },
      { claimant: 'library-after', status: 201, code: libraryAfter.code },
    ].map((h) =>
      h.status === 201
        ? { claimant: h.claimant, attempt: 0, status: 'claimed' as const, code: h.code!, ms: 0 }
        : { claimant: h.claimant, attempt: 0, status: 'error' as const, error: 'unavailable', ms: 0 },
    );
    const summary = await assertStormInvariants(dibs, 'disk', [...outcomes, ...fromHttp], {
      codes,
      perClaimantLimit: 1,
      allowedErrors: ['unavailable'],
      allowUnacknowledged: true,
    });
    console.log(
      `[disk] postgres WAL: after the restart the same library handle and the same service claim again; codes given ${summary.codesGiven}, ledger violations 0`,
    );
  });

  it('a buy storm (3 processes) while the WAL disk fills: only `unavailable`, nothing acknowledged lost, sold ≤ cap, back after the restart', async () => {
    // more units than buys in the storm: it keeps writing WAL until the server stops, and the wave
    // after the restart sells what the full disk refused
    await buyStormOnFullDisk({
      label: 'postgres WAL',
      sku: 'WAL',
      cap: LONG ? 16_000 : 3200,
      buyers: LONG ? 15_000 : 3000,
      delayMs: 2,
      store,
      dibs,
      storedOrders: async (saleId) =>
        new Set(
          (await server.query<{ id: string }>('SELECT id FROM disk.sale_orders WHERE sale_id = $1', [saleId])).map(
            (r) => r.id,
          ),
        ),
      fault: walFault,
    });
  });
});
