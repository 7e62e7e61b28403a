/**
 * One process of an import storm: imports its list of codes into the shared pool once every
 * process has said `ready` and been told `go`, and records the import's answer (or its error).
 */
import { appendFileSync, readFileSync } from 'node:fs';
import { openDibs } from '../../src/index.js';

interface Config {
  store: string;
  pool: string;
  /** One element per import call, run one after another. */
  ops: string[][];
  batchSize: number;
  resultFile: string;
}

const config = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Config;
const dibs = await openDibs(config.store);
process.stdout.write('ready\n');
await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
try {
  for (const [i, codes] of config.ops.entries()) {
    try {
      const result = await dibs.pools.importCodes(config.pool, codes, { batchSize: config.batchSize });
      appendFileSync(config.resultFile, `${JSON.stringify({ op: i, sent: codes.length, result })}\n`);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      appendFileSync(config.resultFile, `${JSON.stringify({ op: i, sent: codes.length, error: message })}\n`);
    }
  }
} finally {
  await dibs.close();
}
