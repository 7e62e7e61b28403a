/**
 * The start barrier of every multi-process test worker: say `ready` on stdout, then wait for a
 * line on stdin (`go`) so that all processes start together. Resolves false if stdin closes first
 * (the coordinator went away).
 */
import { createInterface } from 'node:readline';

export function readyThenGo(): Promise<boolean> {
  process.stdout.write('ready\n');
  return new Promise<boolean>((resolve) => {
    const lines = createInterface({ input: process.stdin });
    lines.once('line', () => {
      resolve(true); // before close(): close() emits 'close' synchronously
      lines.close();
    });
    lines.once('close', () => resolve(false));
  });
}
