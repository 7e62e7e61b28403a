/** One store per describe block: opened in before(), closed and thrown away in after(). */
import { after, before } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';

/**
 * `store` is read when the suite runs (a Cluster's URL is known only then); `drop` removes what
 * the store left behind. The URL is readable at once, for worker processes.
 */
export function openForSuite(
  store: () => string,
  drop: () => Promise<void> | void,
): { readonly dibs: Dibs; readonly store: string } {
  let dibs: Dibs | undefined;
  before(async () => {
    dibs = await openDibs(store());
  });
  after(async () => {
    await dibs?.close();
    await drop();
  });
  return {
    get dibs() {
      if (!dibs) throw new Error('the suite store is opened in before()');
      return dibs;
    },
    get store() {
      return store();
    },
  };
}
