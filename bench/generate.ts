/**
 * Generating 1M codes vs importing 1M codes into SQLite (the baseline, same run): generation must
 * be as fast as an import — it IS an import of freshly drawn codes, plus the drawing.
 *
 *   npm run bench -- generate      (BENCH_GEN_CODES, default 1,000,000)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDibs } from '../src/index.js';
import { codeShape } from '../src/core/generate.js';

const CODES = Number(process.env.BENCH_GEN_CODES ?? 1_000_000);

export async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-bench-gen-'));
  const dibs = await openDibs(`sqlite:${join(dir, 'bench.db')}`);
  try {
    const spec = { count: CODES, pattern: 'GIFT-####-####', charset: 'alphanumeric' as const, checkChar: true };
    const draw = performance.now();
    codeShape(spec).generate(CODES);
    const drawSeconds = (performance.now() - draw) / 1000;

    await dibs.pools.create({ name: 'imported' });
    const t0 = performance.now();
    await dibs.pools.importCodes(
      'imported',
      (function* () {
        for (let i = 0; i < CODES; i++) yield `GIFT-${String(i).padStart(9, '0')}`;
      })(),
    );
    const importSeconds = (performance.now() - t0) / 1000;

    // a customer's CSV of random codes in file order: what "as fast as an import" means in practice
    const randomCodes = codeShape({ ...spec, pattern: 'CSV-####-####' }).generate(CODES);
    await dibs.pools.create({ name: 'random' });
    const t2 = performance.now();
    await dibs.pools.importCodes('random', randomCodes);
    const randomSeconds = (performance.now() - t2) / 1000;

    await dibs.pools.create({ name: 'generated' });
    const t1 = performance.now();
    const result = await dibs.pools.generate('generated', spec);
    const generateSeconds = (performance.now() - t1) / 1000;
    if (result.generated !== CODES) throw new Error(`generated ${result.generated} of ${CODES}`);

    console.log(
      `SQLite, ${CODES.toLocaleString('en-US')} codes (pattern GIFT-####-#### + check character, 31^8 space):`,
    );
    console.log(`| run | seconds | codes/s | vs import |\n|---|---:|---:|---:|`);
    console.log(
      `| import of random codes, file order (baseline) | ${randomSeconds.toFixed(2)} | ${Math.round(CODES / randomSeconds).toLocaleString('en-US')} | 1.00× |`,
    );
    console.log(
      `| import of sequential codes (best case) | ${importSeconds.toFixed(2)} | ${Math.round(CODES / importSeconds).toLocaleString('en-US')} | ${(randomSeconds / importSeconds).toFixed(2)}× |`,
    );
    console.log(
      `| generate | ${generateSeconds.toFixed(2)} | ${Math.round(CODES / generateSeconds).toLocaleString('en-US')} | ${(randomSeconds / generateSeconds).toFixed(2)}× |`,
    );
    console.log(`drawing alone: ${drawSeconds.toFixed(2)} s; collisions redrawn: ${result.collisions}`);
  } finally {
    await dibs.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
