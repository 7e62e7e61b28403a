/**
 * The fair start's draw: everyone who joined a waiting room before its sale opened gets a random
 * place in line, drawn once by the store at the opening. The draw is a seeded Fisher–Yates shuffle
 * so that anyone holding the recorded seed can re-derive the whole order — the same function runs
 * in SQLite's adapter, PostgreSQL (functions/room_draw.sql), Redis (sale_lib.lua) and Firestore,
 * and every step of it is integer arithmetic that is exact in a double (products stay below 2^47),
 * so all four agree bit for bit.
 *
 * The generator is L'Ecuyer's combined multiplicative generator (1988): two Park–Miller style
 * streams, period ≈ 2.3·10^18, seeded from the 64-bit seed. `next() % i` has a bias of at most
 * i / 2^31 — under 5·10^-5 for a pre-queue of 100,000 — which the docs state.
 */
const M1 = 2147483563;
const A1 = 40014;
const M2 = 2147483399;
const A2 = 40692;

/** A seed: 16 lowercase hex digits (64 bits), as recorded on the room. */
export const DRAW_SEED = /^[0-9a-f]{16}$/;

/**
 * The order of the pre-queue: `order[k - 1]` is the arrival number of the ticket drawn into place
 * `k`. Arrival numbers of the pre-queue are 1..size (they joined before anyone after the opening).
 */
export function drawOrder(seed: string, size: number): number[] {
  if (!DRAW_SEED.test(seed)) throw new Error(`draw seed must be 16 hex digits, got '${seed}'`);
  let s1 = (Number.parseInt(seed.slice(0, 8), 16) % (M1 - 1)) + 1;
  let s2 = (Number.parseInt(seed.slice(8, 16), 16) % (M2 - 1)) + 1;
  const order = Array.from({ length: size }, (_, i) => i + 1);
  for (let i = size; i >= 2; i--) {
    s1 = (s1 * A1) % M1;
    s2 = (s2 * A2) % M2;
    let z = s1 - s2;
    if (z < 1) z += M1 - 1;
    const j = 1 + (z % i);
    const t = order[i - 1]!;
    order[i - 1] = order[j - 1]!;
    order[j - 1] = t;
  }
  return order;
}

/** `place[n]` = the place drawn for arrival number n (index 0 unused). */
export function drawnPlaces(seed: string, size: number): number[] {
  const places = new Array<number>(size + 1).fill(0);
  drawOrder(seed, size).forEach((number, k) => {
    places[number] = k + 1;
  });
  return places;
}
