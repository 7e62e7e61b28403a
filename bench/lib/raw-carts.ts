/**
 * The raw baselines of the carts bench (carts.ts): the same cart of 3 lines over 3 sales done with
 * the bare driver, as someone would write it by hand — a conditional `held + q <= cap − sold` on
 * each sale and one hold row per line, all or nothing, then (for the confirm) every hold turned into
 * an order. No per-customer limit, no idempotency key, no expiry, no events, no cart record: what
 * dibs adds on top is what the ratio prices.
 *
 * Durability is the one dibs uses by default on each store: SQLite WAL + synchronous=FULL,
 * PostgreSQL synchronous_commit as the server has it (on), Redis as the server is configured (no
 * acks asked for, as dibs by default).
 */
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import pg from 'pg';

/** One store's raw cart steps; sales are created per run, every cart names all of them. */
export interface RawCarts {
  /** A fresh set of `lines` sales, each with room for `cap` units. */
  newSales(lines: number, cap: number): Promise<number[]>;
  /** Holds one unit on every sale in one transaction/script; false when any line was refused (nothing written). */
  hold(cart: string, sales: number[], customer: string): Promise<boolean>;
  /** Turns the cart's holds into orders in one transaction/script. */
  confirm(cart: string): Promise<void>;
  /** Units held and sold of a sale, as the store has them (for the run's own check). */
  counts(sale: number): Promise<{ held: number; sold: number }>;
  close(): Promise<void>;
}

/** better-sqlite3, BEGIN IMMEDIATE, one commit per cart step. */
export function sqliteRawCarts(file: string): RawCarts {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(`CREATE TABLE raw_sales (id INTEGER PRIMARY KEY, cap INTEGER NOT NULL, sold INTEGER NOT NULL DEFAULT 0, held INTEGER NOT NULL DEFAULT 0);
           CREATE TABLE raw_holds (id INTEGER PRIMARY KEY, cart TEXT NOT NULL, sale_id INTEGER NOT NULL, customer TEXT NOT NULL, quantity INTEGER NOT NULL, status TEXT NOT NULL DEFAULT 'active', expires_at TEXT NOT NULL);
           CREATE INDEX raw_holds_cart ON raw_holds (cart);
           CREATE TABLE raw_orders (id INTEGER PRIMARY KEY, sale_id INTEGER NOT NULL, customer TEXT NOT NULL, quantity INTEGER NOT NULL, hold_id INTEGER NOT NULL, created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));`);
  const insertSale = db.prepare('INSERT INTO raw_sales (cap) VALUES (?) RETURNING id');
  const take = db.prepare('UPDATE raw_sales SET held = held + 1 WHERE id = ? AND sold + held + 1 <= cap');
  const insertHold = db.prepare(
    `INSERT INTO raw_holds (cart, sale_id, customer, quantity, expires_at) VALUES (?, ?, ?, 1, strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+60 seconds'))`,
  );
  const holdsOf = db.prepare(
    `SELECT id, sale_id, customer, quantity FROM raw_holds WHERE cart = ? AND status = 'active'`,
  );
  const settle = db.prepare(`UPDATE raw_holds SET status = 'confirmed' WHERE id = ?`);
  const move = db.prepare('UPDATE raw_sales SET held = held - ?, sold = sold + ? WHERE id = ?');
  const order = db.prepare('INSERT INTO raw_orders (sale_id, customer, quantity, hold_id) VALUES (?, ?, ?, ?)');
  const count = db.prepare('SELECT held, sold FROM raw_sales WHERE id = ?');
  const refused = new Error('line refused');
  const hold = db.transaction((cart: string, sales: number[], customer: string) => {
    for (const sale of sales) {
      if (take.run(sale).changes !== 1) throw refused; // rolls the whole cart back
      insertHold.run(cart, sale, customer);
    }
  });
  const confirm = db.transaction((cart: string) => {
    for (const h of holdsOf.all(cart) as { id: number; sale_id: number; customer: string; quantity: number }[]) {
      settle.run(h.id);
      move.run(h.quantity, h.quantity, h.sale_id);
      order.run(h.sale_id, h.customer, h.quantity, h.id);
    }
  });
  return {
    async newSales(lines, cap) {
      return Array.from({ length: lines }, () => (insertSale.get(cap) as { id: number }).id);
    },
    async hold(cart, sales, customer) {
      try {
        hold.immediate(cart, sales, customer);
        return true;
      } catch (error) {
        if (error === refused) return false;
        throw error;
      }
    },
    async confirm(cart) {
      confirm.immediate(cart);
    },
    async counts(sale) {
      return count.get(sale) as { held: number; sold: number };
    },
    async close() {
      db.close();
    },
  };
}

const PG_SCHEMA = `
  CREATE TABLE raw_sales (id serial PRIMARY KEY, cap integer NOT NULL, sold integer NOT NULL DEFAULT 0, held integer NOT NULL DEFAULT 0);
  CREATE TABLE raw_holds (id bigserial PRIMARY KEY, cart text NOT NULL, sale_id integer NOT NULL, customer text NOT NULL, quantity integer NOT NULL, status text NOT NULL DEFAULT 'active', expires_at timestamptz NOT NULL);
  CREATE INDEX raw_holds_cart ON raw_holds (cart);
  CREATE TABLE raw_orders (id bigserial PRIMARY KEY, sale_id integer NOT NULL, customer text NOT NULL, quantity integer NOT NULL, hold_id bigint NOT NULL, created_at timestamptz NOT NULL DEFAULT now());`;

/**
 * node-postgres over a pool of `connections`: BEGIN, the 3 conditional UPDATEs in sale id order
 * (so two carts never deadlock), one INSERT of the 3 holds, COMMIT — 6 round trips, the textbook
 * hand-written transaction. The confirm: BEGIN, holds → confirmed, counters moved, orders, COMMIT.
 */
export async function postgresRawCarts(url: string, schema: string, connections: number): Promise<RawCarts> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`CREATE SCHEMA "${schema}"; SET search_path = "${schema}"; ${PG_SCHEMA}`);
  } finally {
    await admin.end();
  }
  const pool = new pg.Pool({ connectionString: url, max: connections, options: `-c search_path=${schema}` });
  const inTransaction = async <T>(work: (c: pg.PoolClient) => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  };
  const refused = new Error('line refused');
  return {
    async newSales(lines, cap) {
      const { rows } = await pool.query<{ id: number }>(
        'INSERT INTO raw_sales (cap) SELECT $1 FROM generate_series(1, $2) RETURNING id',
        [cap, lines],
      );
      return rows.map((r) => r.id).sort((a, b) => a - b);
    },
    async hold(cart, sales, customer) {
      const ordered = [...sales].sort((a, b) => a - b);
      try {
        await inTransaction(async (c) => {
          for (const sale of ordered) {
            const r = await c.query({
              name: 'raw_cart_take',
              text: 'UPDATE raw_sales SET held = held + 1 WHERE id = $1 AND sold + held + 1 <= cap',
              values: [sale],
            });
            if (r.rowCount !== 1) throw refused;
          }
          await c.query({
            name: 'raw_cart_holds',
            text: `INSERT INTO raw_holds (cart, sale_id, customer, quantity, expires_at)
                   SELECT $1, s, $3, 1, now() + interval '60 seconds' FROM unnest($2::int[]) AS s`,
            values: [cart, ordered, customer],
          });
        });
        return true;
      } catch (error) {
        if (error === refused) return false;
        throw error;
      }
    },
    async confirm(cart) {
      await inTransaction(async (c) => {
        await c.query({
          name: 'raw_cart_confirm',
          text: `WITH h AS (UPDATE raw_holds SET status = 'confirmed' WHERE cart = $1 AND status = 'active'
                            RETURNING id, sale_id, customer, quantity),
                      s AS (UPDATE raw_sales r SET held = r.held - h.quantity, sold = r.sold + h.quantity
                            FROM h WHERE r.id = h.sale_id)
                 INSERT INTO raw_orders (sale_id, customer, quantity, hold_id)
                 SELECT sale_id, customer, quantity, id FROM h`,
          values: [cart],
        });
      });
    },
    async counts(sale) {
      const { rows } = await pool.query<{ held: number; sold: number }>(
        'SELECT held, sold FROM raw_sales WHERE id = $1',
        [sale],
      );
      return rows[0]!;
    },
    async close() {
      await pool.end();
      const drop = new pg.Client({ connectionString: url });
      await drop.connect();
      await drop.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await drop.end();
    },
  };
}

/** Every line is judged before any is written; then one hold record per line, the cart's list kept for the confirm. */
const REDIS_HOLD = `
local n = #KEYS - 2
for i = 1, n do
  local s = redis.call('HMGET', KEYS[i], 'cap', 'sold', 'held')
  if tonumber(s[2]) + tonumber(s[3]) + 1 > tonumber(s[1]) then return 0 end
end
for i = 1, n do
  redis.call('HINCRBY', KEYS[i], 'held', 1)
  redis.call('HSET', KEYS[n + 1], ARGV[1] .. ':' .. i, cjson.encode({sale = KEYS[i], customer = ARGV[2], q = 1}))
end
redis.call('HSET', KEYS[n + 2], ARGV[1], n)
return 1`;

const REDIS_CONFIRM = `
local n = tonumber(redis.call('HGET', KEYS[2], ARGV[1]))
if not n then return 0 end
for i = 1, n do
  local h = cjson.decode(redis.call('HGET', KEYS[1], ARGV[1] .. ':' .. i))
  redis.call('HINCRBY', h.sale, 'held', -h.q)
  redis.call('HINCRBY', h.sale, 'sold', h.q)
  redis.call('HDEL', KEYS[1], ARGV[1] .. ':' .. i)
  redis.call('HSET', KEYS[3], ARGV[1] .. ':' .. i, cjson.encode(h))
end
redis.call('HDEL', KEYS[2], ARGV[1])
return n`;

type CartCommands = Redis & {
  rawCartHold(...args: (string | number)[]): Promise<number>;
  rawCartConfirm(...args: string[]): Promise<number>;
};

/** ioredis, one Lua script per step (every key in one hash slot: `{prefix:raw}`). */
export function redisRawCarts(url: string, prefix: string): RawCarts {
  const redis = new Redis(url) as CartCommands;
  redis.defineCommand('rawCartHold', { lua: REDIS_HOLD });
  redis.defineCommand('rawCartConfirm', { numberOfKeys: 3, lua: REDIS_CONFIRM });
  const key = (what: string) => `{${prefix}:raw}:${what}`;
  let next = 0;
  return {
    async newSales(lines, cap) {
      return Promise.all(
        Array.from({ length: lines }, async () => {
          const id = ++next;
          await redis.hset(key(`sale:${id}`), 'cap', cap, 'sold', 0, 'held', 0);
          return id;
        }),
      );
    },
    async hold(cart, sales, customer) {
      const keys = [...sales.map((s) => key(`sale:${s}`)), key('holds'), key('carts')];
      return Number(await redis.rawCartHold(keys.length, ...keys, cart, customer)) === 1;
    },
    async confirm(cart) {
      if (Number(await redis.rawCartConfirm(key('holds'), key('carts'), key('orders'), cart)) === 0)
        throw new Error(`raw cart ${cart} not found`);
    },
    async counts(sale) {
      const [held, sold] = await redis.hmget(key(`sale:${sale}`), 'held', 'sold');
      return { held: Number(held), sold: Number(sold) };
    },
    async close() {
      let cursor = '0';
      do {
        const [after, keys] = await redis.scan(cursor, 'MATCH', `{${prefix}:raw}*`, 'COUNT', 1000);
        cursor = after;
        if (keys.length) await redis.del(...keys);
      } while (cursor !== '0');
      redis.disconnect();
    },
  };
}
