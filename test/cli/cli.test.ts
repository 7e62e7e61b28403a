/** The dibs command, run as a real process against a temp SQLite store. */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runCli } from '../support/cli.js';
import { tempSqliteStore } from '../support/sqlite.js';
import { openDibs } from '../../src/index.js';

describe('dibs CLI', () => {
  const temp = tempSqliteStore();
  const env = { DIBS_STORE: temp.store };
  after(() => temp.cleanup());

  it('prints useful help for the program and every command', async () => {
    const help = await runCli(['--help']);
    assert.equal(help.code, 0);
    for (const word of ['serve', 'pools', 'import', 'claim', 'stats', 'export', 'audit', 'sales', 'Quick start'])
      assert.match(help.stdout, new RegExp(word));
    const claimHelp = await runCli(['claim', '--help']);
    assert.match(claimHelp.stdout, /--key <key>/);
    assert.match(claimHelp.stdout, /Examples:/);
    const serveHelp = await runCli(['serve', '--help']);
    assert.match(serveHelp.stdout, /DIBS_WEBHOOK_SECRET/);
  });

  it('serve refuses webhook endpoints without a signing secret (they used to be marked delivered and never sent)', async () => {
    const refused = await runCli(['serve', '--port', '0', '--workers', '2'], {
      env: { ...env, DIBS_WEBHOOK_URLS: 'http://127.0.0.1:9/hooks' },
    });
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /DIBS_WEBHOOK_SECRET/);
  });

  it("every command opens the config file's store unless --store or DIBS_STORE names one", async () => {
    const other = tempSqliteStore();
    try {
      const config = join(temp.dir, 'dibs.json');
      writeFileSync(config, JSON.stringify({ store: other.store, port: 4000, shutdownTimeoutMs: 1000 }));
      const noStore = { DIBS_STORE: '' };
      const created = await runCli(['pools', 'create', 'from-config', '--config', config, '--json'], { env: noStore });
      assert.equal(created.code, 0, created.stderr);
      const viaEnv = await runCli(['pools', 'list', '--json'], { env: { ...noStore, DIBS_CONFIG: config } });
      assert.match(viaEnv.stdout, /from-config/);
      assert.match(
        (await runCli(['pools', 'list', '--json'], { env: { DIBS_STORE: other.store } })).stdout,
        /from-config/,
      );
      // --store and DIBS_STORE outrank the file
      assert.doesNotMatch(
        (await runCli(['pools', 'list', '--json', '--config', config], { env })).stdout,
        /from-config/,
      );
      assert.doesNotMatch(
        (await runCli(['pools', 'list', '--json', '--config', config, '--store', temp.store], { env: noStore })).stdout,
        /from-config/,
      );
      const broken = join(temp.dir, 'broken.json');
      writeFileSync(broken, '{"store": ');
      const refused = await runCli(['pools', 'list', '--config', broken], { env: noStore });
      assert.equal(refused.code, 2);
      assert.match(refused.stderr, /config: cannot read .*broken\.json/);
    } finally {
      other.cleanup();
    }
  });

  it('holds a code, sets a code window, adds and redeems a multi-use code', async () => {
    assert.equal((await runCli(['pools', 'create', 'walkin', '--public', '--json'], { env })).code, 0);
    const file = join(temp.dir, 'walkin.csv');
    writeFileSync(file, 'code\nW-1\nW-2\n');
    const imported = await runCli(['import', 'walkin', file], { env });
    assert.equal(imported.code, 0, imported.stderr);
    const held = await runCli(['hold', 'walkin', 'W-1', 'alice', '--ttl', '60000', '--json'], { env });
    assert.equal(held.code, 0, held.stderr);
    assert.equal((JSON.parse(held.stdout) as { hold: { claimant: string } }).hold.claimant, 'alice');
    const refused = await runCli(['hold', 'walkin', 'W-1', 'bob'], { env });
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /held/);
    assert.equal((await runCli(['unhold', 'walkin', 'W-1', '--claimant', 'alice'], { env })).code, 0);
    const windowed = await runCli(['window', 'walkin', 'W-2', '--expires', '2020-01-01T00:00:00Z'], { env });
    assert.equal(windowed.code, 0, windowed.stderr);
    assert.match(windowed.stdout, /until 2020-01-01T00:00:00.000Z/);
    const multi = await runCli(['multi-use', 'walkin', 'WELCOME10', '--uses', '2'], { env });
    assert.equal(multi.code, 0, multi.stderr);
    assert.match(multi.stdout, /2 of 2 uses left/);
    const used = await runCli(['redeem', 'walkin', 'WELCOME10', '--claimant', 'carol', '--order', 'o-1'], { env });
    assert.equal(used.code, 0, used.stderr);
    assert.match(used.stdout, /1 of 2 uses left/);
  });

  it('runs a sale behind a waiting room: enable, join, reserve with the ticket, plain reserve refused', async () => {
    const sale = JSON.parse(
      (
        await runCli(
          [
            'sales',
            'create',
            'ROOM-CLI',
            '--ends',
            new Date(Date.now() + 3_600_000).toISOString(),
            '--cap',
            '1',
            '--json',
          ],
          { env },
        )
      ).stdout,
    ) as { id: string };
    assert.equal((await runCli(['sales', 'room', 'enable', sale.id, '--rate', '5'], { env })).code, 0);
    const ann = JSON.parse((await runCli(['sales', 'room', 'join', sale.id, 'ann', '--json'], { env })).stdout) as {
      status: string;
      token: string;
    };
    const bob = await runCli(['sales', 'room', 'join', sale.id, 'bob'], { env });
    assert.equal(ann.status, 'admitted');
    assert.match(bob.stdout, /status +waiting/);
    const plain = await runCli(['sales', 'reserve', sale.id, 'eve'], { env });
    assert.equal(plain.code, 2);
    assert.match(plain.stderr, /ticket_required/);
    const held = await runCli(['sales', 'room', 'reserve', sale.id, 'ann', ann.token, '--json'], { env });
    assert.equal(held.code, 0, held.stderr);
    assert.equal((JSON.parse(held.stdout) as { quantity: number }).quantity, 1);
    const forged = await runCli(['sales', 'room', 'ticket', sale.id, 'bob', ann.token], { env });
    assert.equal(forged.code, 2);
    assert.match(forged.stderr, /invalid_ticket/);
  });

  it('a fair start with verification: the pre-queue drawn at the opening, verify admits', async () => {
    const sale = JSON.parse(
      (
        await runCli(
          [
            'sales',
            'create',
            'FAIR-CLI',
            '--starts',
            new Date(Date.now() + 600_000).toISOString(),
            '--ends',
            new Date(Date.now() + 3_600_000).toISOString(),
            '--cap',
            '1',
            '--json',
          ],
          { env },
        )
      ).stdout,
    ) as { id: string };
    const enabled = await runCli(['sales', 'room', 'enable', sale.id, '--fair-start', '--verification'], { env });
    assert.match(enabled.stdout, /fair start +yes/);
    const ann = JSON.parse((await runCli(['sales', 'room', 'join', sale.id, 'ann', '--json'], { env })).stdout) as {
      place: number | null;
      token: string;
    };
    assert.equal(ann.place, null);
    // the opening, brought forward (the CLI has no sale update)
    const dibs = await openDibs(temp.store);
    await dibs.sales.update(sale.id, { startsAt: new Date(Date.now() + 300).toISOString() });
    await dibs.close();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const shown = await runCli(['sales', 'room', 'show', sale.id], { env });
    assert.match(shown.stdout, /draw +seed [0-9a-f]{16} over 1 early tickets/);
    const verified = await runCli(['sales', 'room', 'verify', sale.id, 'ann', ann.token], { env });
    assert.equal(verified.code, 0, verified.stderr);
    assert.match(verified.stdout, /status +admitted/);
    const rerated = await runCli(['sales', 'room', 'enable', sale.id, '--rate', '7'], { env });
    assert.match(rerated.stdout, /verification +required before admission/, 'settings left out stay as they are');
    assert.match(rerated.stdout, /fair start +yes/);
    const help = await runCli(['sales', 'room', 'enable', '--help'], { env });
    assert.match(help.stdout, /--no-verification/);
  });

  it('holds a cart over two sales, refuses one naming its line, confirms one as orders', async () => {
    const ends = new Date(Date.now() + 3_600_000).toISOString();
    const create = async (sku: string, cap: string, limit: string) =>
      (
        JSON.parse(
          (await runCli(['sales', 'create', sku, '--ends', ends, '--cap', cap, '--limit', limit, '--json'], { env }))
            .stdout,
        ) as {
          id: string;
        }
      ).id;
    const [tee, mug] = [await create('CART-TEE', '5', '2'), await create('CART-MUG', '1', '1')];
    const held = await runCli(['carts', 'hold', 'ann', `${tee}:2`, mug, '--key', 'ann-1', '--json'], { env });
    assert.equal(held.code, 0, held.stderr);
    const { cart } = JSON.parse(held.stdout) as { cart: { id: string; lines: unknown[] } };
    assert.equal(cart.lines.length, 2);
    const refused = await runCli(['carts', 'hold', 'bob', `${tee}:1`, `${mug}:1`], { env });
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /sold_out.*cart line 1/);
    const confirmed = await runCli(['carts', 'confirm', cart.id, '--json'], { env });
    assert.equal(confirmed.code, 0, confirmed.stderr);
    const result = JSON.parse(confirmed.stdout) as {
      cart: { status: string };
      orders: { saleId: string; quantity: number }[];
    };
    assert.equal(result.cart.status, 'confirmed');
    assert.deepEqual(
      result.orders.map((o) => [o.saleId, o.quantity]),
      [
        [tee, 2],
        [mug, 1],
      ],
    );
  });

  it('creates a pool, imports a file and stdin, claims, reports and exports', async () => {
    assert.equal((await runCli(['pools', 'create', 'cli-pool', '--limit', '1', '--low-stock', '1'], { env })).code, 0);
    const file = join(temp.dir, 'codes.csv');
    writeFileSync(file, 'code\nF1\nF2\nF2\n\n');
    const fromFile = await runCli(['import', 'cli-pool', file, '--json'], { env });
    assert.equal(fromFile.code, 0, fromFile.stderr);
    assert.deepEqual(JSON.parse(fromFile.stdout), { imported: 2, duplicates: 1, invalid: 0 });
    const fromStdin = await runCli(['import', 'cli-pool', '-'], { env, input: 'S1\nS2\nF1\n' });
    assert.equal(fromStdin.code, 0, fromStdin.stderr);
    assert.match(fromStdin.stdout, /imported 2, duplicates 1, invalid 0/);
    // the windowed example of `import --help` runs as printed (its printf input, into another pool)
    const example = /\$ printf '([^']+)' \| dibs import spring -/.exec((await runCli(['import', '--help'])).stdout);
    assert.ok(example, 'import --help shows a CSV with window columns');
    assert.equal((await runCli(['pools', 'create', 'cli-windows'], { env })).code, 0);
    const windowed = await runCli(['import', 'cli-windows', '-'], {
      env,
      input: `${example[1]!.replaceAll('\\n', '\n')}BAD,tomorrow,\n`,
    });
    assert.equal(windowed.code, 0, windowed.stderr);
    assert.match(
      windowed.stdout,
      /imported 2, duplicates 0, invalid 1 \(first: line 4, starts_at: must be an ISO 8601 timestamp/,
    );
    const windows = await runCli(['export', 'cli-windows'], { env });
    assert.match(
      windows.stdout,
      /^WKND-1,free,,,,2026-11-28T00:00:00\.000Z,2026-11-30T00:00:00\.000Z$/m,
      windows.stderr,
    );

    const claim = await runCli(['claim', 'cli-pool', 'alice', '--key', 'k1', '--json'], { env });
    assert.equal(claim.code, 0, claim.stderr);
    const claimed = JSON.parse(claim.stdout) as { status: string; code: string };
    assert.equal(claimed.status, 'claimed');
    const again = await runCli(['claim', 'cli-pool', 'alice'], { env });
    assert.match(again.stdout, new RegExp(`already-held: ${claimed.code}`));

    const stats = await runCli(['stats', 'cli-pool', '--json'], { env });
    assert.deepEqual(JSON.parse(stats.stdout), { total: 4, free: 3, claimed: 1, redeemed: 0, revoked: 0 });
    const out = join(temp.dir, 'export.csv');
    assert.equal((await runCli(['export', 'cli-pool', '--out', out], { env })).code, 0);
    const csv = readFileSync(out, 'utf8').trim().split('\n');
    assert.equal(csv[0], 'code,status,claimant,claimed_at,redeemed_at,starts_at,expires_at');
    assert.equal(csv.length, 5);
    const stdoutExport = await runCli(['export', 'cli-pool', '--status', 'claimed'], { env });
    assert.match(stdoutExport.stdout, new RegExp(`${claimed.code},claimed,alice`));

    const audit = await runCli(['audit', 'cli-pool'], { env });
    assert.equal(audit.code, 0);
    assert.match(audit.stdout, /clean/);
    const redeem = await runCli(['redeem', 'cli-pool', claimed.code], { env });
    assert.match(redeem.stdout, /redeemed \(alice\)/);
    const events = await runCli(['events', '--pool', 'cli-pool', '--json'], { env });
    assert.ok((JSON.parse(events.stdout) as unknown[]).length >= 0);
    const list = await runCli(['pools', 'list'], { env });
    assert.match(list.stdout, /cli-pool\s+4\s+3\s+0\s+1/);
  });

  it('exits 2 with a one-line error for user mistakes, never a stack trace', async () => {
    const missing = await runCli(['stats', 'no-such-pool'], { env });
    assert.equal(missing.code, 2);
    assert.equal(missing.stderr.trim(), "error [not_found]: pool 'no-such-pool' does not exist");
    const bad = await runCli(['pools', 'create', 'bad name'], { env });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^error \[invalid_input\]: name: /);
    const badNumber = await runCli(['pools', 'create', 'x', '--limit', 'many'], { env });
    assert.equal(badNumber.code, 2);
    assert.doesNotMatch(badNumber.stderr, /at .*\.ts:\d+/);
    const unknown = await runCli(['frobnicate'], { env });
    assert.equal(unknown.code, 2);
    const store = await runCli(['stats', 'x', '--store', 'mysql://nope'], {});
    assert.equal(store.code, 2);
    assert.match(store.stderr, /unsupported scheme/);
  });

  it('runs flash sales from the command line', async () => {
    const ends = new Date(Date.now() + 3_600_000).toISOString();
    const created = await runCli(
      ['sales', 'create', 'CLI-SKU', '--ends', ends, '--cap', '2', '--id', 'cli-sale', '--json'],
      { env },
    );
    assert.equal(created.code, 0, created.stderr);
    assert.equal(JSON.parse(created.stdout).status, 'live');
    assert.match((await runCli(['sales', 'buy', 'cli-sale', 'alice'], { env })).stdout, /1 unit\(s\) for alice/);
    const hold = JSON.parse(
      (await runCli(['sales', 'reserve', 'cli-sale', 'bob', '--ttl', '60', '--json'], { env })).stdout,
    ) as { id: string };
    assert.match((await runCli(['sales', 'confirm', hold.id], { env })).stdout, /for bob/);
    const soldOut = await runCli(['sales', 'buy', 'cli-sale', 'carol'], { env });
    assert.equal(soldOut.code, 2);
    assert.match(soldOut.stderr, /error \[sold_out\]/);
    assert.match((await runCli(['sales', 'audit', 'cli-sale'], { env })).stdout, /clean/);
  });

  it('takes, inspects and releases leases, and counts', async () => {
    const lease = JSON.parse((await runCli(['locks', 'acquire', 'nightly', '--ttl', '60000'], { env })).stdout) as {
      token: string;
      fence: number;
    };
    assert.ok(lease.token.length > 8);
    const busy = await runCli(['locks', 'acquire', 'nightly', '--wait', '0'], { env });
    assert.equal(busy.code, 2);
    assert.match(busy.stderr, /error \[lock_timeout\]/);
    const inspect = await runCli(['locks', 'inspect', 'nightly'], { env });
    assert.match(inspect.stdout, new RegExp(`${lease.token.slice(0, 8)}… fence ${lease.fence}`));
    assert.doesNotMatch(inspect.stdout, new RegExp(lease.token));
    assert.match(inspect.stdout, /waiters\s+0\b/);
    // A waiter in another process is shown by `locks inspect` (waiters register in the store).
    const waiter = runCli(['locks', 'acquire', 'nightly', '--wait', '60000', '--ttl', '60000', '--fair'], { env });
    let shown = '';
    for (const deadline = Date.now() + 60_000; Date.now() < deadline && !/waiters\s+1\b/.test(shown); )
      shown = (await runCli(['locks', 'inspect', 'nightly'], { env })).stdout;
    assert.match(shown, /waiters\s+1\b/);
    assert.match(
      (await runCli(['locks', 'release', 'nightly', '--token', lease.token], { env })).stdout,
      /released nightly/,
    );
    const next = JSON.parse((await waiter).stdout) as { token: string; fence: number; ticket?: number };
    assert.ok(next.fence > lease.fence);
    assert.equal(typeof next.ticket, 'number', "--fair waited in the store's line");
    assert.match(
      (await runCli(['locks', 'renew', 'nightly', '--token', next.token, '--json'], { env })).stdout,
      /"ttlMs": 60000/,
    );
    assert.match(
      (await runCli(['locks', 'release', 'nightly', '--token', next.token], { env })).stdout,
      /released nightly/,
    );
    await runCli(['counters', 'incr', 'views', '--by', '3'], { env });
    await runCli(['counters', 'decr', 'views'], { env });
    assert.match((await runCli(['counters', 'get', 'views'], { env })).stdout, /views = 2/);
  });
});
