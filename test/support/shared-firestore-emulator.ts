/**
 * One Firestore emulator for every file of a test run, started by scripts/test.mjs (not a test):
 * prints, on one line of JSON, the environment that points the run's files at it once it answers
 * (`{}` when no emulator is installed), and stops it when its stdin ends — the runner closes it when the run is over, and the
 * kernel closes it when the runner dies, even by SIGKILL — or on SIGTERM/SIGINT/SIGHUP.
 */
import { firestoreEmulatorInstalled, SHARED_HOST_VARIABLE, startFirestoreEmulator } from './firestore.js';

if (!firestoreEmulatorInstalled()) {
  process.stdout.write('{}\n');
  process.exit(0);
}
const started = Date.now();
const emulator = await startFirestoreEmulator();
console.error(`# shared Firestore emulator on ${emulator.host}, answering after ${Date.now() - started} ms`);
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void emulator.stop().finally(() => process.exit(0));
};
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, stop);
process.stdout.write(`${JSON.stringify({ [SHARED_HOST_VARIABLE]: emulator.host })}\n`);
