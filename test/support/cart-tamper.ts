/**
 * Breaking a cart behind dibs' back, one hook per store: writes straight into the store (SQL, a
 * Lua script, Firestore documents) so the cart conformance suite can show the sale audit's cart
 * rule (I9) catching what no dibs step would ever write. Each hook keeps the sale's own counters
 * and indexes in step with the change where it can, so the finding is the cart rule's alone.
 */
import { FieldValue, Firestore, type DocumentReference } from '@google-cloud/firestore';
import Database from 'better-sqlite3';
import pg from 'pg';
import { encodeId } from '../../src/backends/firestore/layout.js';
import { createRedisClient } from '../../src/backends/redis/connect.js';
import { parseStoreUrl } from '../../src/backends/store-url.js';

/** A cart's line as the test knows it (from `getCart`). */
export interface TamperLine {
  saleId: string;
  holdId: string;
  quantity: number;
}

export interface CartTamper {
  /** Marks the line's hold cancelled (its units off the sale's held count), its cart left held. */
  cancelLine(store: string, line: TamperLine): Promise<void>;
  /** Moves the line's hold's expiry `byMs` later (and its expiry indexes with it). */
  moveLineExpiry(store: string, line: TamperLine, byMs: number): Promise<void>;
}

const later = (iso: string, byMs: number) => new Date(Date.parse(iso) + byMs).toISOString();

export const sqliteCartTamper: CartTamper = {
  async cancelLine(store, line) {
    withSqlite(store, (db) => {
      db.prepare("UPDATE dibs_holds SET status = 'cancelled' WHERE id = ?").run(line.holdId);
      db.prepare('UPDATE dibs_sales SET held = held - ? WHERE id = ?').run(line.quantity, line.saleId);
    });
  },
  async moveLineExpiry(store, line, byMs) {
    withSqlite(store, (db) => {
      const { expires_at } = db.prepare('SELECT expires_at FROM dibs_holds WHERE id = ?').get(line.holdId) as {
        expires_at: string;
      };
      db.prepare('UPDATE dibs_holds SET expires_at = ? WHERE id = ?').run(later(expires_at, byMs), line.holdId);
    });
  },
};

function withSqlite(store: string, write: (db: Database.Database) => void): void {
  const db = new Database(store.slice('sqlite:'.length));
  try {
    db.pragma('busy_timeout = 5000');
    db.transaction(() => write(db)).immediate();
  } finally {
    db.close();
  }
}

export const postgresCartTamper: CartTamper = {
  async cancelLine(store, line) {
    await withPg(store, [
      ["UPDATE sale_holds SET status = 'cancelled' WHERE id = $1", [line.holdId]],
      ['UPDATE sales SET held = held - $1 WHERE id = $2', [line.quantity, line.saleId]],
    ]);
  },
  async moveLineExpiry(store, line, byMs) {
    await withPg(store, [
      [
        'UPDATE sale_holds SET expires_at = expires_at + make_interval(secs => $1) WHERE id = $2',
        [byMs / 1000, line.holdId],
      ],
    ]);
  },
};

async function withPg(store: string, statements: [string, unknown[]][]): Promise<void> {
  const url = new URL(store);
  const schema = url.searchParams.get('schema')!;
  url.search = '';
  const client = new pg.Client({ connectionString: url.href, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    await client.query('BEGIN');
    for (const [text, values] of statements) await client.query(text, values);
    await client.query('COMMIT');
  } finally {
    await client.end();
  }
}

/**
 * Redis: a hold lives in its sale group's `{prefix:sg:gggg}:holds` hash (its id carries the group,
 * `hold_<gggg>…`), indexed by expiry in `T:active:<sale>` and `T:due` (scripts/sale_lib.lua).
 */
const REDIS_CANCEL = `
local rec = cjson.decode(redis.call('HGET', KEYS[1], ARGV[1]))
local t = string.sub(KEYS[1], 1, -7)
rec.s = 'cancelled'
redis.call('HSET', KEYS[1], rec.id, cjson.encode(rec))
redis.call('ZREM', t .. ':active:' .. rec.sale, rec.id)
redis.call('ZREM', t .. ':due', rec.id)
redis.call('HINCRBY', t .. ':sale:' .. rec.sale, 'held', -rec.q)
local cust = cjson.decode(redis.call('HGET', t .. ':cust:' .. rec.sale, rec.c))
cust.h = nil
redis.call('HSET', t .. ':cust:' .. rec.sale, rec.c, cjson.encode(cust))
return 1`;
const REDIS_MOVE = `
local rec = cjson.decode(redis.call('HGET', KEYS[1], ARGV[1]))
local t = string.sub(KEYS[1], 1, -7)
rec.e = rec.e + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], rec.id, cjson.encode(rec))
if rec.s == 'active' then
  redis.call('ZADD', t .. ':active:' .. rec.sale, rec.e, rec.id)
  redis.call('ZADD', t .. ':due', rec.e, rec.id)
end
return 1`;

export const redisCartTamper: CartTamper = {
  async cancelLine(store, line) {
    await onRedis(store, line.holdId, REDIS_CANCEL, []);
  },
  async moveLineExpiry(store, line, byMs) {
    await onRedis(store, line.holdId, REDIS_MOVE, [byMs]);
  },
};

async function onRedis(store: string, holdId: string, script: string, args: (string | number)[]): Promise<void> {
  const url = parseStoreUrl(store); // a Cluster's hosts move into its `nodes` parameter
  const prefix = url.searchParams.get('prefix')!;
  url.searchParams.delete('prefix');
  const client = createRedisClient(url, { node: {} });
  try {
    const group = holdId.slice('hold_'.length, 'hold_'.length + 4);
    await client.eval(script, 1, `{${prefix}:sg:${group}}:holds`, holdId, ...args);
  } finally {
    client.disconnect();
  }
}

/** Firestore: holds are `dibs/{prefix}/holds/{id}` (ae = the expiry index while active), sales `…/sales/{id}`. */
export const firestoreCartTamper: CartTamper = {
  async cancelLine(store, line) {
    await onFirestore(store, async (db, root) => {
      await db.runTransaction(async (tx) => {
        const sale = root.collection('sales').doc(line.saleId);
        const hold = (await tx.get(root.collection('holds').doc(line.holdId))).data()!;
        const customer = sale.collection('customers').doc(encodeId(hold.c as string));
        tx.update(root.collection('holds').doc(line.holdId), { s: 'cancelled', ae: FieldValue.delete() });
        tx.update(sale, { held: FieldValue.increment(-line.quantity) });
        tx.update(customer, { h: null });
      });
    });
  },
  async moveLineExpiry(store, line, byMs) {
    await onFirestore(store, async (db, root) => {
      await db.runTransaction(async (tx) => {
        const ref = root.collection('holds').doc(line.holdId);
        const hold = (await tx.get(ref)).data()!;
        const e = (hold.e as number) + byMs;
        tx.update(ref, hold.s === 'active' ? { e, ae: e } : { e });
      });
    });
  },
};

async function onFirestore(
  store: string,
  write: (db: Firestore, root: DocumentReference) => Promise<void>,
): Promise<void> {
  const url = new URL(store);
  const db = new Firestore({ projectId: url.hostname });
  try {
    await write(db, db.collection('dibs').doc(url.searchParams.get('prefix') ?? 'default'));
  } finally {
    await db.terminate();
  }
}
