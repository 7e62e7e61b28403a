/**
 * A dispatcher process for the kill test: delivers the outbox of a SQLite file to one Redis stream
 * destination (short lease, so a killed run's events come due again soon) until nothing is
 * pending, printing `appended <n>` as it goes. argv: store URL, destination URL.
 */
import { openDibs } from '../../src/index.js';
import { RedisStreamDestination } from '../../src/notify/redis-stream.js';
import { OutboxDispatcher } from '../../src/notify/dispatcher.js';

const [store, destinationUrl] = process.argv.slice(2) as [string, string];
const dibs = await openDibs(store);
const destination = await RedisStreamDestination.open(destinationUrl, { backoff: { baseMs: 20, maxMs: 100 } });
const dispatcher = new OutboxDispatcher({
  outbox: dibs.backend.outbox,
  destinations: [destination],
  batchSize: 50,
  leaseMs: 1000,
  backoff: { baseMs: 10, maxMs: 50 },
});
process.stdout.write('ready\n');
while ((await dibs.backend.outbox.status()).pending > 0) {
  const r = await dispatcher.runOnce();
  process.stdout.write(`delivered ${r.delivered}\n`);
}
await destination.close();
await dibs.close();
