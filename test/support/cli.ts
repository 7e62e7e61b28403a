import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { distIsFresh } from '../../bench/lib/dist.js';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SOURCE = join(ROOT, 'src', 'cli', 'main.ts');
const BUILT = join(ROOT, 'dist', 'cli', 'main.js');

/**
 * Node arguments that start the dibs CLI: the compiled dist/ — what users run, and about 1 s less
 * per spawn than compiling the sources through tsx — when it is at least as new as every file
 * under src/ (`npm test` builds first); otherwise the sources through tsx, so a run of a test file
 * right after an edit never tests a stale build.
 */
export const CLI_ARGS: readonly string[] = distIsFresh(ROOT) ? [BUILT] : ['--import', 'tsx', SOURCE];

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the dibs CLI (CLI_ARGS) with `args`, optional stdin, bounded in time: 120 s by default, a
 * bound for a hung process, not a speed check (a spawn took over 30 s once at load 20).
 */
export function runCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; input?: string; cwd?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...CLI_ARGS, ...args], {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}
