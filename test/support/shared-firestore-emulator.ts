/**
 * One Firestore emulator for every file of a test run, started by scripts/test.mjs (not a test):
 * once it answers, writes `{"host":"127.0.0.1:PORT"}` to the file named in argv[2] (`{}` when no
 * emulator is installed; the runner writes `{}` if this process fails first), which the run's files
 * wait for (firestore.ts), and stops it when its stdin ends — the runner closes it when the run is
 * over, and the kernel closes it when the runner dies, even by SIGKILL — or on SIGTERM/SIGINT/SIGHUP.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { firestoreEmulatorInstalled, startFirestoreEmulator } from './firestore.js';

const hostFile = process.argv[2]!;
/** Whole or not at all: a file that waits for it never reads half a line. */
const announce = (value: object) => {
  writeFileSync(`${hostFile}.tmp`, `${JSON.stringify(value)}\n`);
  renameSync(`${hostFile}.tmp`, hostFile);
};

if (!firestoreEmulatorInstalled()) {
  announce({});
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
announce({ host: emulator.host });
