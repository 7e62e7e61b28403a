// The raw baseline of the cold-start bench (bench/cold-start.ts): one short-lived process that
// imports only the driver (`pg` or `ioredis`), connects, makes 5 claims with the smallest
// equivalent of dibs' claim (one code per claimant, taken once), closes, and prints one JSON line
// in the shape of cold-start-worker.mjs. What dibs adds is the difference between the two.
//   postgres: one autocommit UPDATE … FOR UPDATE SKIP LOCKED on a table (code, claimant) (a unique
//             claimant column is the per-claimant limit), unnamed (a transaction pooler's rule)
//   redis:    one Lua script (EVALSHA, EVAL on NOSCRIPT): the claimant's code if it has one, else
//             SPOP a free code and record it
// `name`: PostgreSQL `schema.table`, Redis the key tag of the set and hash.
const [kind, target, name, id] = process.argv.slice(2);
const claimants = Array.from({ length: 5 }, (_, i) => `${id}-${i}`);
const t0 = performance.now();

async function postgres() {
  const { default: pg } = await import('pg');
  const tImport = performance.now();
  const client = new pg.Client({ connectionString: target });
  client.on('error', () => {});
  await client.connect();
  const table = name
    .split('.')
    .map((part) => `"${part}"`)
    .join('.');
  const claim = async (claimant) => {
    const { rows } = await client.query(
      `UPDATE ${table} SET claimant = $1 WHERE code = (SELECT code FROM ${table} WHERE claimant IS NULL LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING code`,
      [claimant],
    );
    if (rows.length !== 1) throw new Error('sold out');
  };
  return { tImport, tOpen: performance.now(), claim, close: () => client.end() };
}

const CLAIM_LUA = `local held = redis.call('HGET', KEYS[2], ARGV[1])
if held then return held end
local code = redis.call('SPOP', KEYS[1])
if not code then return false end
redis.call('HSET', KEYS[2], ARGV[1], code)
return code`;

async function redis() {
  const { Redis } = await import('ioredis');
  const { createHash } = await import('node:crypto');
  const tImport = performance.now();
  const client = new Redis(target, { lazyConnect: true, maxRetriesPerRequest: 2 });
  client.on('error', () => {});
  await client.connect();
  const sha = createHash('sha1').update(CLAIM_LUA).digest('hex');
  const keys = [`{${name}}:free`, `{${name}}:held`];
  const claim = async (claimant) => {
    let code;
    try {
      code = await client.evalsha(sha, 2, ...keys, claimant);
    } catch (error) {
      if (!String(error?.message).startsWith('NOSCRIPT')) throw error;
      code = await client.eval(CLAIM_LUA, 2, ...keys, claimant);
    }
    if (!code) throw new Error('sold out');
  };
  return { tImport, tOpen: performance.now(), claim, close: () => client.quit() };
}

const conn = kind === 'postgres' ? await postgres() : await redis();
const claims = [];
let errors = 0;
let firstClaimMs = null;
let startToFirstMs = null;
for (const claimant of claimants) {
  const t = performance.now();
  try {
    await conn.claim(claimant);
    claims.push(performance.now() - t);
    if (firstClaimMs === null) {
      firstClaimMs = performance.now() - t0;
      startToFirstMs = performance.now();
    }
  } catch (error) {
    errors++;
    process.stderr.write(`raw claim failed: ${error?.message ?? error}\n`);
  }
}
await conn.close();
// Measured as openDibs is (it loads the driver): importMs the driver's import; openMs driver
// import + connect; firstClaimMs driver import + connect + first claim; startToFirstMs process
// start (Node's time origin) → first claim.
console.log(
  JSON.stringify({
    importMs: conn.tImport - t0,
    openMs: conn.tOpen - t0,
    firstClaimMs,
    startToFirstMs,
    claims,
    errors,
  }),
);
