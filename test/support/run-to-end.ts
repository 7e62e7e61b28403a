/**
 * A command run to its end without blocking the event loop. spawnSync would stall every other
 * suite of the file for as long as the command runs (`redis-cli --cluster create` waits seconds
 * for the nodes to join, initdb takes seconds): a client of another suite whose query timer
 * expired meanwhile fails with a timeout when the loop resumes, although its answer is already
 * in the socket (timers run before I/O). Seen: "postgres: Query read timeout" on a `SET` while the
 * file's Redis Cluster suite was being created.
 */
import { spawn } from 'node:child_process';

export interface Ended {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Set when the command could not be started, or was killed for running past `timeoutMs`. */
  error?: Error;
}

export function runToEnd(
  command: string,
  args: string[],
  options: { timeoutMs: number; uid?: number; gid?: number },
): Promise<Ended> {
  const { timeoutMs, ...spawnOptions } = options;
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...spawnOptions });
    let stdout = '';
    let stderr = '';
    let error: Error | undefined;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      error = new Error(`${command} ran past ${timeoutMs} ms`);
      child.kill('SIGKILL');
    }, timeoutMs);
    child.once('error', (e) => {
      error = e;
    });
    child.once('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr, ...(error ? { error } : {}) });
    });
  });
}

/** Runs `command` to its end; unless it exited 0, throws naming `what`, how it ended and the end of its output. */
export async function runOrThrow(
  what: string,
  command: string,
  args: string[],
  options: Parameters<typeof runToEnd>[2],
): Promise<Ended> {
  const ended = await runToEnd(command, args, options);
  if (ended.status !== 0)
    throw new Error(
      `${what} failed (${ended.status ?? ended.signal}${ended.error ? `, ${ended.error.message}` : ''}): ${ended.stderr}${ended.stdout.trim().split('\n').slice(-5).join('\n')}`,
    );
  return ended;
}
