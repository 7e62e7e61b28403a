/** One process of the Redis benchmark: `raw <url> <prefix> <n> <conc> <id>` or `dibs <store> <pool> <n> <conc> <id>`. */
import { Redis } from 'ioredis';
import { openDibs } from '../src/index.js';
import { barrier, timeOps } from './lib/measure.js';
import { RAW_SCRIPT } from './redis.js';

const [mode, target, name, count, concurrency, id] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string,
];
if (mode === 'raw') {
  const client = new Redis(target);
  const sha = (await client.script('LOAD', RAW_SCRIPT)) as string;
  await barrier();
  const run = await timeOps(Number(count), Number(concurrency), (i) =>
    client.evalsha(sha, 2, `{${name}}:free`, `{${name}}:holders`, `${id}-${i}`),
  );
  client.disconnect();
  process.stdout.write(JSON.stringify(run));
} else {
  const dibs = await openDibs(target);
  await barrier();
  const run = await timeOps(Number(count), Number(concurrency), (i) => dibs.pools.claim(name, `${id}-${i}`));
  await dibs.close();
  process.stdout.write(JSON.stringify(run));
}
