import { openDibs } from '../../src/index.js';

/** Creates pool `bench` with `n` codes (`DIBS-0` …) in a store, streamed through the importer. */
export async function seedDibs(store: string, n: number): Promise<void> {
  const dibs = await openDibs(store);
  await dibs.pools.create({ name: 'bench' });
  await dibs.pools.importCodes(
    'bench',
    (function* () {
      for (let i = 0; i < n; i++) yield `DIBS-${i}`;
    })(),
  );
  await dibs.close();
}
