/**
 * A process that runs dibs calls for a test whose store clock is this process's own: SQLite decides
 * every time by the clock of the process running the step, so to move "the store's clock" the test
 * runs its calls here, under test/support/clockshift.c, and moves this process's clock.
 *
 * Protocol, one JSON object per line: stdin `{ id, open: url }` → `{ id, value: handle }`;
 * `{ id, handle, path: ['sales', 'buy'], args }` → `{ id, value }` or `{ id, error: { code, message } }`;
 * `{ id, handle, close: true }`; `{ id, now: true }` → this process's Date.now().
 */
import { createInterface } from 'node:readline';
import { openDibs, type Dibs } from '../../src/index.js';

interface Request {
  id: number;
  open?: string;
  handle?: number;
  path?: string[];
  args?: unknown[];
  close?: boolean;
  now?: boolean;
}

const handles = new Map<number, Dibs>();
let nextHandle = 1;
const reply = (message: object) => process.stdout.write(`${JSON.stringify(message)}\n`);

async function answer(request: Request): Promise<unknown> {
  if (request.now) return Date.now();
  if (request.open) {
    const handle = nextHandle++;
    handles.set(handle, await openDibs(request.open));
    return handle;
  }
  const dibs = handles.get(request.handle!);
  if (!dibs) throw new Error(`no handle ${request.handle}`);
  if (request.close) {
    handles.delete(request.handle!);
    await dibs.close();
    return null;
  }
  const [area, method] = request.path!;
  const target = (dibs as unknown as Record<string, Record<string, (...args: unknown[]) => Promise<unknown>>>)[area!]!;
  return await target[method!]!.apply(target, request.args ?? []);
}

createInterface({ input: process.stdin }).on('line', (line) => {
  const request = JSON.parse(line) as Request;
  answer(request).then(
    (value) => reply({ id: request.id, value: value ?? null }),
    (error: { code?: string; message?: string }) =>
      reply({ id: request.id, error: { code: error.code, message: error.message ?? String(error) } }),
  );
});
process.stdin.on('end', async () => {
  for (const dibs of handles.values()) await dibs.close().catch(() => undefined);
  process.exit(0);
});
reply({ ready: true });
