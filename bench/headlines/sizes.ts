/** How big each headline run is: `--quick` for a bounded run (minutes), the default for a fuller one. */
export interface Sizes {
  rounds: number;
  /** Claims per run (PostgreSQL, SQLite, Redis). */
  claims: number;
  /** Codes imported per import round. */
  importCodes: number;
  /** Buys (or reserve + confirm) per sale run. */
  buys: number;
  /** Lock handoffs per run. */
  handoffs: number;
  /** Claimants of the seed scenario (codes: half of them). */
  claimants: number;
}

export function sizesFor(quick: boolean, rounds?: number): Sizes {
  const base: Sizes = quick
    ? { rounds: 3, claims: 3000, importCodes: 200_000, buys: 1500, handoffs: 100, claimants: 4000 }
    : { rounds: 5, claims: 10_000, importCodes: 1_000_000, buys: 3000, handoffs: 200, claimants: 10_000 };
  return rounds ? { ...base, rounds } : base;
}
