/**
 * Random ids on hot paths, drawn from the CSPRNG in 4 kB batches: one `randomBytes(16)` per claim
 * (a synchronous OpenSSL call and a Buffer) cost ~2.5 µs of the Redis claim's ~20 µs in Node,
 * a batch costs that once per 256 ids — as Node's own randomUUID does with its entropy cache.
 * Bytes are handed out once. The batch is drawn on first use; one drawn while a startup snapshot
 * is built is dropped when the snapshot is serialised, so processes restored from it never share it.
 */
import { randomFillSync } from 'node:crypto';
import { startupSnapshot } from 'node:v8';

const batch = Buffer.allocUnsafe(4096);
let next = batch.length;
if (startupSnapshot?.isBuildingSnapshot()) startupSnapshot.addSerializeCallback(() => void (next = batch.length));

/** `bytes` (1–256) fresh random bytes, URL-safe base64. */
export function randomId(bytes = 16): string {
  if (next + bytes > batch.length) {
    randomFillSync(batch);
    next = 0;
  }
  const id = batch.toString('base64url', next, next + bytes);
  next += bytes;
  return id;
}
