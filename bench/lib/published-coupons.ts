/**
 * BASELINE ONLY — never use this to hand out coupons. A faithful implementation of the published
 * Firebase Functions + Firestore coupon design dibs learns from (/work/shared/references/000_*):
 * one document per coupon `{ code, isAssigned, randomFloat, assignedTo?, updatedOn? }`, the range
 * [0,1) split into 10 shuffled segments, and per segment a transaction that queries
 * `isAssigned == false && randomFloat in [start, end)` ordered by randomFloat `limit(5)`, re-reads
 * the first candidate (then the fallbacks) and assigns it. "Does this user already have a coupon?"
 * is checked OUTSIDE the transaction, before it — so two concurrent requests of one user can both
 * win — and the query inside the transaction locks its whole range, so concurrent claims collide.
 *
 * Kept under bench/ to measure against (bench/firestore.ts) and to reproduce its same-user race
 * (test/firestore/published-race.test.ts). The only additions: the collection name is a parameter,
 * every transaction attempt is counted, and `isContentionError` (not shown in the article) is
 * spelled out.
 */
import { Timestamp, type Firestore } from '@google-cloud/firestore';
import { isContention } from '../../src/backends/firestore/transactions.js';

export interface Coupon {
  code: string;
  isAssigned: boolean;
  randomFloat: number;
  assignedTo?: string;
  updatedOn?: Timestamp;
}

export class PublishedCoupons {
  /** Transaction attempts (every run of a transaction body, including the SDK's own retries). */
  attempts = 0;

  constructor(
    private readonly db: Firestore,
    private readonly collectionName: string,
  ) {}

  private get collection() {
    return this.db.collection(this.collectionName);
  }

  /** Seeds coupons as the design does: `randomFloat = Math.random()` per coupon. */
  async seed(codes: readonly string[]): Promise<void> {
    for (let i = 0; i < codes.length; i += 400) {
      const batch = this.db.batch();
      for (const code of codes.slice(i, i + 400))
        batch.set(this.collection.doc(), { code, isAssigned: false, randomFloat: Math.random() } satisfies Coupon);
      await batch.commit();
    }
  }

  async dbClaimRandomCoupon(phoneNumber: string): Promise<Coupon | null> {
    // First, check if user already has a coupon
    const existingSnapshot = await this.collection
      .where('assignedTo', '==', phoneNumber)
      .where('isAssigned', '==', true)
      .limit(1)
      .get();
    if (!existingSnapshot.empty) {
      return existingSnapshot.docs[0]!.data() as Coupon;
    }
    // Generate shuffled ranges
    const ranges = generateShuffledRanges();
    // Try each range sequentially
    for (let i = 0; i < ranges.length; i++) {
      const [rangeStart, rangeEnd] = ranges[i]!;
      try {
        const coupon = await this.tryClaimFromRange(rangeStart, rangeEnd, phoneNumber);
        if (coupon) {
          return coupon; // Success!
        }
      } catch (error) {
        // If transaction conflict, move to next range
        if (isContentionError(error)) {
          continue; // Try next range
        }
        throw error; // Other errors bubble up
      }
    }
    // All ranges exhausted
    return null;
  }

  private async tryClaimFromRange(rangeStart: number, rangeEnd: number, phoneNumber: string): Promise<Coupon | null> {
    const collection = this.collection;
    return await this.db.runTransaction(async (transaction) => {
      this.attempts++;
      // Query for unassigned coupons within this range
      const unassignedSnapshot = await transaction.get(
        collection
          .where('isAssigned', '==', false)
          .where('randomFloat', '>=', rangeStart)
          .where('randomFloat', '<', rangeEnd)
          .orderBy('randomFloat')
          .limit(5), // Fetch 5 for fallback options
      );
      if (unassignedSnapshot.empty) {
        return null;
      }
      // Try to claim the first available coupon
      const couponDoc = unassignedSnapshot.docs[0]!;
      const couponRef = collection.doc(couponDoc.id);
      // Re-read within transaction to detect conflicts
      const couponSnapshot = await transaction.get(couponRef);
      // Double-check it's still unassigned
      if (!couponSnapshot.exists || couponSnapshot.data()?.isAssigned === true) {
        // Already claimed! Try fallback coupons
        for (let i = 1; i < unassignedSnapshot.docs.length; i++) {
          const altCouponDoc = unassignedSnapshot.docs[i]!;
          const altCouponRef = collection.doc(altCouponDoc.id);
          const altSnapshot = await transaction.get(altCouponRef);
          if (altSnapshot.exists && altSnapshot.data()?.isAssigned === false) {
            // Found an available fallback
            transaction.update(altCouponRef, { isAssigned: true, assignedTo: phoneNumber, updatedOn: Timestamp.now() });
            return altCouponDoc.data() as Coupon;
          }
        }
        return null; // All fallbacks claimed
      }
      // Original coupon still available - claim it
      transaction.update(couponRef, { isAssigned: true, assignedTo: phoneNumber, updatedOn: Timestamp.now() });
      return couponDoc.data() as Coupon;
    });
  }

  /** Users holding more than one coupon (the design's one-per-user rule broken), with their codes. */
  async usersWithSeveral(): Promise<Map<string, string[]>> {
    const assigned = await this.collection.where('isAssigned', '==', true).get();
    const byUser = new Map<string, string[]>();
    for (const doc of assigned.docs) {
      const c = doc.data() as Coupon;
      byUser.set(c.assignedTo!, [...(byUser.get(c.assignedTo!) ?? []), c.code]);
    }
    return new Map([...byUser].filter(([, codes]) => codes.length > 1));
  }
}

function generateShuffledRanges(): [number, number][] {
  const ranges: [number, number][] = [];
  // Create 10 ranges: [0.0-0.1, 0.1-0.2, ..., 0.9-1.0]
  for (let i = 0; i < 10; i++) {
    ranges.push([i * 0.1, (i + 1) * 0.1]);
  }
  // Shuffle using Fisher-Yates algorithm
  for (let i = ranges.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [ranges[i], ranges[j]] = [ranges[j]!, ranges[i]!];
  }
  return ranges;
}

/**
 * The article does not show it. A contention error is what Firestore reports for a conflicting
 * transaction — ABORTED — and what the emulator reports for a transaction it rolled back while it
 * waited for locks; the same classification dibs uses, so both sides are judged alike.
 */
function isContentionError(error: unknown): boolean {
  return isContention(error);
}
