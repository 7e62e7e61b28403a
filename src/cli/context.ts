/** Shared CLI plumbing: opening the store, printing results, turning errors into exit codes. */
import { InvalidArgumentError, type Command } from 'commander';
import type { Dibs } from '../core/dibs.js';
import { isDibsError } from '../core/errors.js';
import { resolveStore } from '../service/config.js';
import { openDibs } from '../index.js';

export interface GlobalOptions {
  store?: string;
  config?: string;
  json?: boolean;
}

/** Exit codes: 0 ok, 1 failure (store down, violations found), 2 a user mistake (bad input, not found, …). */
export const EXIT = { ok: 0, failure: 1, usage: 2 } as const;

/** --store, DIBS_STORE, the config file's `store` (--config or DIBS_CONFIG), or the default. */
export function storeOf(command: Command): string {
  const { store, config } = command.optsWithGlobals() as GlobalOptions;
  return resolveStore({
    ...(store !== undefined ? { flag: store } : {}),
    ...(config !== undefined ? { file: config } : {}),
  });
}

/** Opens the store for one command and always closes it. */
export async function withDibs<T>(command: Command, fn: (dibs: Dibs) => Promise<T>): Promise<T> {
  const dibs = await openDibs(storeOf(command));
  try {
    return await fn(dibs);
  } finally {
    await dibs.close();
  }
}

export function wantsJson(command: Command): boolean {
  return Boolean((command.optsWithGlobals() as GlobalOptions).json);
}

/** Prints `value` as JSON with --json, otherwise through `human`. */
export function output(command: Command, value: unknown, human: () => string): void {
  process.stdout.write(wantsJson(command) ? `${JSON.stringify(value, null, 2)}\n` : `${human()}\n`);
}

export function reportError(error: unknown): number {
  if (isDibsError(error)) {
    process.stderr.write(`error [${error.code}]: ${error.message}\n`);
    return error.status < 500 ? EXIT.usage : EXIT.failure;
  }
  const commanderCode = (error as { code?: string }).code;
  // Commander has already printed its message; help and --version are not errors.
  if (typeof commanderCode === 'string' && commanderCode.startsWith('commander.'))
    return (error as { exitCode?: number }).exitCode === 0 ? EXIT.ok : EXIT.usage;
  process.stderr.write(`error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  return EXIT.failure;
}

/** Parses a whole number option, or throws a user error naming the option. */
export function intOption(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n)) throw new InvalidArgumentError(`${name} must be a whole number, got '${value}'`);
    return n;
  };
}

/** A compact aligned key: value block for human output. */
export function block(entries: [string, unknown][]): string {
  const width = Math.max(...entries.map(([k]) => k.length));
  return entries
    .map(
      ([k, v]) =>
        `${k.padEnd(width)}  ${v === null || v === undefined ? '-' : typeof v === 'object' ? JSON.stringify(v) : String(v)}`,
    )
    .join('\n');
}
