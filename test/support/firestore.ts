/**
 * The official Cloud Firestore emulator for tests (Debian package
 * `google-cloud-cli-firestore-emulator`, Java 17), on a free loopback port; every test file has a
 * project id of its own, which isolates its data. A suite's emulator (firestoreForSuite,
 * firestoreStoreForSuite) is the one scripts/test.mjs started for the whole run when there is one
 * (DIBS_FIRESTORE_SHARED_FILE, see shared-firestore-emulator.ts): a fresh JVM takes seconds to boot
 * and its first transactions run interpreted, which cost every file several seconds of its own. A
 * file run without it, and a test that needs an emulator of its own (a moved clock, a restart),
 * starts one with startFirestoreEmulator; the test waits until it answers (not a fixed sleep) and
 * stops it by killing its process group.
 * Its transactions are real: conflicting transactions are aborted and retried, no lost updates.
 *
 * In CI (CI=true) a missing emulator fails loudly; elsewhere the tests are skipped with a warning.
 */
import type { DocumentReference } from '@google-cloud/firestore';
import type { Dibs } from '../../src/index.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { after, before } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { uniqueId } from './assert.js';
import { freePort } from './redis.js';
import { openForSuite } from './suite-store.js';

export const EMULATOR =
  process.env.DIBS_FIRESTORE_EMULATOR ??
  '/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud_firestore_emulator';

export function firestoreEmulatorInstalled(): boolean {
  const found = existsSync(EMULATOR);
  if (!found && process.env.CI)
    throw new Error(
      `the Cloud Firestore emulator is not installed at ${EMULATOR} (CI=true): apt-get install google-cloud-cli-firestore-emulator openjdk-17-jre-headless`,
    );
  if (!found)
    console.warn(
      `\n  ⚠ SKIPPING Firestore tests: no emulator at ${EMULATOR}. Install google-cloud-cli-firestore-emulator (and Java 17) to run them.\n`,
    );
  return found;
}

export interface OwnedEmulator {
  /** `127.0.0.1:PORT`, the value of FIRESTORE_EMULATOR_HOST. */
  host: string;
  /** A project id of its own: every store URL of this file uses it. */
  projectId: string;
  /** `firestore://PROJECT?prefix=…` with a fresh prefix (one isolated tree per call). */
  storeUrl(prefix?: string): string;
  /** Environment for child processes (workers) that open the same emulator. */
  env: NodeJS.ProcessEnv;
  /** Kills an emulator of the file's own; on the run's shared one, deletes this project's data. */
  stop(): Promise<void>;
}

/**
 * Starts the emulator, waits until it answers, and points this process at it (FIRESTORE_EMULATOR_HOST).
 * A port that freePort() found free can be taken before the emulator binds it (emulators of other
 * test files open WebSocket servers on ports of their own choosing): then it starts again on
 * another port, up to 3 times.
 */
export async function startFirestoreEmulator(
  timeoutMs = 120_000,
  /** Added to the emulator's environment (e.g. an LD_PRELOAD that moves its clock). */
  env: Record<string, string> = {},
): Promise<OwnedEmulator> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(await freePort(), timeoutMs, env);
    } catch (error) {
      if (!(error instanceof PortTaken) || attempt >= 3) throw error;
    }
  }
}

class PortTaken extends Error {}

async function startOnce(port: number, timeoutMs: number, extraEnv: Record<string, string>): Promise<OwnedEmulator> {
  const host = `127.0.0.1:${port}`;
  let log = '';
  const child: ChildProcess = spawn(EMULATOR, ['start', `--host=127.0.0.1`, `--port=${port}`], {
    detached: true, // its own process group: the shell script, java and anything java starts die together
    stdio: ['ignore', 'pipe', 'pipe'],
    // a small heap and the serial collector: this machine has 2 cores and many neighbours
    env: {
      ...process.env,
      JAVA_TOOL_OPTIONS: process.env.DIBS_FIRESTORE_JAVA_OPTIONS ?? '-Xmx768m -XX:+UseSerialGC',
      ...extraEnv,
    },
  });
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-4000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
    await exited;
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) {
      const message = `the Firestore emulator exited (${child.exitCode}) before answering:\n${log}`;
      throw /BindException|Address already in use/.test(log) ? new PortTaken(message) : new Error(message);
    }
    try {
      const reply = await fetch(`http://${host}/`, { signal: AbortSignal.timeout(2000) });
      if (reply.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`the Firestore emulator on ${host} did not answer within ${timeoutMs} ms:\n${log}`);
    }
    await sleep(200);
  }
  return onEmulator(host, stop);
}

/** Points this process at the emulator on `host` with a fresh project id. */
function onEmulator(host: string, stop: (projectId: string) => Promise<void>): OwnedEmulator {
  process.env.FIRESTORE_EMULATOR_HOST = host;
  const projectId = uniqueId('dibs').toLowerCase().replace(/_/g, '-');
  return {
    host,
    projectId,
    storeUrl: (prefix = uniqueId('t')) => `firestore://${projectId}?prefix=${prefix}`,
    env: { ...process.env, FIRESTORE_EMULATOR_HOST: host },
    stop: () => stop(projectId),
  };
}

/**
 * Set by scripts/test.mjs to the file where the run's shared emulator announces its host (or `{}`:
 * none). The runner starts it alongside the first files, so a file may have to wait for it.
 */
export const SHARED_FILE_VARIABLE = 'DIBS_FIRESTORE_SHARED_FILE';

/** The shared emulator's host once announced; undefined when this run has none. */
async function sharedHost(): Promise<string | undefined> {
  const file = process.env[SHARED_FILE_VARIABLE];
  if (!file) return undefined;
  // a bound for a runner that never announces, not a speed check: a JVM boot at load has taken 17 s
  for (const deadline = Date.now() + 240_000; !existsSync(file); await sleep(100))
    if (Date.now() > deadline) throw new Error(`the run's shared Firestore emulator was not announced in ${file}`);
  return (JSON.parse(readFileSync(file, 'utf8')) as { host?: string }).host;
}

/**
 * The run's shared emulator when there is one, else one of this file's own. Stopping the shared
 * one only deletes this file's project, so that a long run does not fill its heap.
 */
async function emulatorForSuite(): Promise<OwnedEmulator> {
  const host = await sharedHost();
  if (!host) return startFirestoreEmulator();
  const reply = await fetch(`http://${host}/`, { signal: AbortSignal.timeout(30_000) }).catch((error) => {
    throw new Error(`the run's shared Firestore emulator (${host}) does not answer`, {
      cause: error,
    });
  });
  if (!reply.ok) throw new Error(`the run's shared Firestore emulator on ${host} answered ${reply.status}`);
  return onEmulator(host, async (projectId) => {
    const cleared = await fetch(`http://${host}/emulator/v1/projects/${projectId}/databases/(default)/documents`, {
      method: 'DELETE',
      signal: AbortSignal.timeout(60_000),
    });
    if (!cleared.ok) throw new Error(`the shared Firestore emulator kept project ${projectId}: ${cleared.status}`);
  });
}

/**
 * Inside a `describe`: an emulator (the run's shared one, or one started for it) before its tests,
 * stopped (or its project deleted) after them. The returned
 * object stands for it (its fields are read when the tests run, once it has started).
 */
export function firestoreForSuite(): OwnedEmulator {
  let emulator: OwnedEmulator | undefined;
  before(async () => {
    emulator = await emulatorForSuite();
  });
  after(async () => {
    await emulator?.stop();
  });
  const started = () => {
    if (!emulator) throw new Error('the Firestore emulator is read before its suite started it');
    return emulator;
  };
  return {
    get host() {
      return started().host;
    },
    get projectId() {
      return started().projectId;
    },
    storeUrl: (prefix?: string) => started().storeUrl(prefix),
    get env() {
      return started().env;
    },
    stop: () => started().stop(),
  };
}

/**
 * An emulator for the suite (as firestoreForSuite) and one store opened on it (openForSuite, as the
 * other stores' suites): in before(); the store closed and the emulator stopped in after(). `store` is
 * the URL worker processes open; `emulator` is there for a test that also talks to it directly.
 */
export function firestoreStoreForSuite(): {
  readonly dibs: Dibs;
  readonly store: string;
  readonly emulator: OwnedEmulator;
} {
  let emulator: OwnedEmulator | undefined;
  let store: string | undefined;
  before(async () => {
    emulator = await emulatorForSuite();
    store = emulator.storeUrl();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the Firestore emulator is read before its suite started it');
    return value;
  };
  const suite = openForSuite(
    () => started(store),
    () => emulator?.stop(),
  );
  return {
    get dibs() {
      return suite.dibs;
    },
    get store() {
      return suite.store;
    },
    get emulator() {
      return started(emulator);
    },
  };
}

/**
 * Documents that exist anywhere under `ref`, at any depth, also under parents that no longer
 * exist (Firestore keeps subcollections of a deleted document): what a deletion left behind.
 */
export async function documentsUnder(ref: DocumentReference): Promise<number> {
  // the documents of a collection side by side, not one round trip after another: a pool of a few
  // hundred documents took tens of seconds to count on a loaded machine
  const counts = await Promise.all(
    (await ref.listCollections()).map(async (collection) => {
      const docs = await collection.listDocuments();
      const here = await Promise.all(
        docs.map(async (doc) => ((await doc.get()).exists ? 1 : 0) + (await documentsUnder(doc))),
      );
      return here.reduce((a, b) => a + b, 0);
    }),
  );
  return counts.reduce((a, b) => a + b, 0);
}
