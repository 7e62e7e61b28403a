/** Whether the compiled dist/ is current: used by the HTTP bench (build when stale) and the CLI tests (else run the sources). */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Newest modification time of any file under `dir` (also how test/support/node-worker.ts tells a stale test copy). */
export function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return latest;
}

/** True when `root`/dist/cli/main.js exists and is at least as new as every file under `root`/src. */
export function distIsFresh(root: string): boolean {
  const main = join(root, 'dist', 'cli', 'main.js');
  return existsSync(main) && statSync(main).mtimeMs >= newest(join(root, 'src'));
}
