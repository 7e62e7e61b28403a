/**
 * `npm run bench` runs every benchmark; `npm run bench -- sqlite` (or postgres, redis, …) one.
 * Each benchmark prints a raw baseline and dibs measured in the same run, with ratios.
 * `npm run bench -- summary [--quick]` runs the headline ratios as interleaved rounds (summary.ts);
 * it is not part of "every benchmark" (it repeats their headlines).
 */
import { existsSync, readdirSync } from 'node:fs';

const here = new URL('./', import.meta.url);
const available = readdirSync(here)
  .filter((f) => f.endsWith('.ts') && f !== 'run.ts' && !f.includes('-worker'))
  .map((f) => f.replace(/\.ts$/, ''))
  .sort();
const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const names = wanted.length ? wanted : available.filter((n) => n !== 'summary');
for (const name of names) {
  if (!existsSync(new URL(`./${name}.ts`, here))) {
    console.error(`unknown benchmark '${name}' (available: ${available.join(', ')})`);
    process.exit(2);
  }
}
for (const name of names) {
  console.log(`\n=== bench: ${name} ===`);
  const mod = (await import(new URL(`./${name}.ts`, here).href)) as { main?: () => Promise<void> };
  await mod.main?.();
}
