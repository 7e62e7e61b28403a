// Runs every test/**/*.test.ts file with node's own test runner (through tsx), after a full
// typecheck. `node scripts/test.mjs test/sqlite` runs one folder or file.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { createRequire } from 'node:module';
import { constants, tmpdir } from 'node:os';
import { buildTestCopy } from './test-build.mjs';

const root = new URL('..', import.meta.url).pathname;
const require = createRequire(import.meta.url);

function findTests(path) {
  if (statSync(path).isFile()) return path.endsWith('.test.ts') ? [path] : [];
  return readdirSync(path)
    .sort()
    .flatMap((name) => findTests(join(path, name)));
}

// Where the suite's minutes are (DIBS_TEST_TIMES below), longest first: these files start before
// the others. The runner starts files in the order given, a few at a time, so a minutes-long file
// started last (the two storms below sort near the very end) runs on alone after everything else (a
// serial tail); started first, the many short files fill the lanes at the end. An entry is a file or
// a folder; one that no longer exists matches nothing, and a file matching no entry keeps its sorted
// place after these.
const LONG_FIRST = [
  'test/tiered/faults.test.ts',
  'test/sqlite/storm.test.ts',
  'test/firestore/',
  'test/hostile/',
  'test/faults/',
  'test/redis/',
  'test/postgres/',
];
const rank = (file) => {
  const i = LONG_FIRST.findIndex((entry) => file === entry || file.startsWith(entry));
  return i === -1 ? LONG_FIRST.length : i;
};

const targets = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const files = (targets.length ? targets : ['test'])
  .flatMap((t) => findTests(join(root, t)))
  .map((f) => relative(root, f))
  .sort((a, b) => rank(a) - rank(b)); // stable: sorted paths within a rank
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}

if (!process.argv.includes('--no-typecheck')) {
  const tsc = spawnSync(
    process.execPath,
    [join(dirname(require.resolve('typescript/package.json')), 'bin', 'tsc'), '-p', 'tsconfig.json'],
    { cwd: root, stdio: 'inherit' },
  );
  if (tsc.status !== 0) process.exit(tsc.status ?? 1);
}

/** Copies left by runs that died before removing theirs (named `<pid>-<time>`; that pid is gone). */
function removeOrphanCopies() {
  const dir = join(root, '.test-build');
  let names = [];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(name.split('-')[0]);
    let alive = false;
    try {
      process.kill(pid, 0);
      alive = true;
    } catch (error) {
      alive = error.code === 'EPERM';
    }
    if (!alive) rmSync(join(dir, name), { recursive: true, force: true });
  }
}

/**
 * One Firestore emulator for the files of this run whose suites use one (firestoreForSuite, firestoreStoreForSuite):
 * a fresh JVM per file cost each of them its boot and a cold JIT. Each file still has a project of
 * its own. It boots while the first files run (a JVM boot took 2-17 s, and the runner used to wait
 * for it): `env` names the file where it announces its host, which those files wait for; a `{}`
 * there (no emulator installed, or it did not start) has every file start its own, as when a file
 * runs without this script.
 */
function startSharedFirestore() {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-shared-firestore-'));
  const hostFile = join(dir, 'host.json');
  const guardian = spawn(process.execPath, ['--import', 'tsx', 'test/support/shared-firestore-emulator.ts', hostFile], {
    cwd: root,
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  const exited = new Promise((resolve) =>
    guardian.once('exit', (code) => {
      if (!existsSync(hostFile)) {
        console.error(`the shared Firestore emulator did not start (${code}): each file starts its own`);
        writeFileSync(hostFile, '{}\n');
      }
      resolve();
    }),
  );
  // ending its stdin stops it; if this process dies first, the kernel closes the pipe for us
  const stop = async () => {
    guardian.stdin.end();
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  return { env: { DIBS_FIRESTORE_SHARED_FILE: hostFile }, stop };
}

// the files whose suites take the run's emulator (one that only starts its own does not need it; one
// whose suite comes from a helper that calls them starts its own: slower, still correct)
const usesFirestore = files.some((f) => /\bfirestore(Store)?ForSuite\b/.test(readFileSync(join(root, f), 'utf8')));
const sharedFirestore = usesFirestore ? startSharedFirestore() : undefined;
const sharedFirestoreEnv = sharedFirestore?.env ?? {};

// The compiled copy the files' worker processes run (scripts/test-build.mjs, test/support/node-worker.ts).
removeOrphanCopies();
const testCopy = buildTestCopy(root);

const concurrency = process.env.DIBS_TEST_CONCURRENCY ?? '2';
// --test-force-exit: each file's process exits once its tests and hooks are done. Node 20 can spin
// for ever in its exit-time handle cleanup (seen once: a file whose tests had all passed, 15 min at
// full CPU in FreeEnvironment → CleanupHandles); process.exit skips that cleanup. Leaked
// connections are caught by tests that count them (cold-start, per-invocation), not by a hang.
const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    '--test-force-exit',
    `--test-concurrency=${concurrency}`,
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    // DIBS_TEST_TIMES=FILE also appends each top-level test's file and wall time to FILE, to see
    // where the suite's minutes go.
    ...(process.env.DIBS_TEST_TIMES
      ? ['--test-reporter=./scripts/file-times.mjs', '--test-reporter-destination=stdout']
      : []),
    ...files,
  ],
  {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, ...sharedFirestoreEnv, DIBS_TEST_BUILD: testCopy.dir },
  },
);
// A runner stopped by SIGTERM or SIGINT (a CI timeout, Ctrl-C) stops its test run too, which ends
// the files' processes and, through their teardown, the servers they started. It then exits as
// stopped by that signal, whatever the test run's own code: a run cut short never reads as passed.
let stoppedBy;
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'])
  process.on(signal, () => {
    stoppedBy ??= signal;
    child.kill(signal);
  });
child.on('exit', async (code, signal) => {
  testCopy.remove();
  await sharedFirestore?.stop();
  const by = stoppedBy ?? signal;
  process.exit(by ? 128 + constants.signals[by] : (code ?? 1));
});
