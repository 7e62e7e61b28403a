/**
 * Code generation: unique, hard-to-guess codes from a pattern, with an optional check character
 * so a mistyped code is caught before any lookup.
 *
 * - A pattern is literal text with `#` where a random character of the charset goes
 *   (`PROMO-####-####`); `length: 8` is the pattern `########`. Prefix and suffix are literal.
 * - Charsets: `numeric`, `alpha` and `alphanumeric` leave out look-alikes (0/O, 1/I/L), or give
 *   your own characters.
 * - Randomness: crypto-strong bytes, mapped to the charset by rejection sampling (no modulo bias).
 * - Check character (Luhn mod N over the charset) appended after the random part: it catches
 *   every single-character substitution and most adjacent swaps.
 * - Feasibility: at most half of the pattern's space may be asked for — beyond that, codes get
 *   guessable and random draws collide more than they succeed. Refused before anything is written.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { DibsError } from './errors.js';
import { LIMITS } from './schemas.js';
import { parseInput } from './validate.js';

export const CHARSETS = {
  numeric: '0123456789',
  alpha: 'ABCDEFGHJKMNPQRSTUVWXYZ',
  alphanumeric: '23456789ABCDEFGHJKMNPQRSTUVWXYZ',
} as const;
export type CharsetName = keyof typeof CHARSETS;

/** The share of the pattern's space one pool may hold. */
export const MAX_SPACE_SHARE = 0.5;
const PLACEHOLDER = '#';

export const generateSpecSchema = z
  .object({
    count: z
      .number({ error: 'must be a number' })
      .int('must be a whole number')
      .min(1, 'must be at least 1')
      .max(10_000_000, 'at most 10,000,000 per call'),
    length: z.number({ error: 'must be a number' }).int('must be a whole number').min(1).max(64).optional(),
    pattern: z.string({ error: 'must be a string' }).min(1).max(LIMITS.code).optional(),
    charset: z
      .union([
        z.enum(Object.keys(CHARSETS) as [CharsetName, ...CharsetName[]]),
        z.string().min(2, 'a custom charset needs at least 2 characters').max(256),
      ])
      .default('alphanumeric'),
    prefix: z.string().max(32).default(''),
    suffix: z.string().max(32).default(''),
    checkChar: z.boolean().default(false),
  })
  .strict()
  .superRefine((s, ctx) => {
    if ((s.length === undefined) === (s.pattern === undefined))
      ctx.addIssue({ code: 'custom', path: ['pattern'], message: 'give either length or pattern' });
    if (s.pattern !== undefined && !s.pattern.includes(PLACEHOLDER))
      ctx.addIssue({
        code: 'custom',
        path: ['pattern'],
        message: `needs at least one ${PLACEHOLDER} (one random character)`,
      });
    const chars = charsetOf(s.charset);
    if (new Set(chars).size !== chars.length)
      ctx.addIssue({ code: 'custom', path: ['charset'], message: 'has repeated characters' });
    if (chars.includes(PLACEHOLDER))
      ctx.addIssue({ code: 'custom', path: ['charset'], message: `must not contain ${PLACEHOLDER}` });
  });

export type GenerateInput = z.input<typeof generateSpecSchema>;
export type GenerateSpec = z.output<typeof generateSpecSchema>;

export function charsetOf(charset: string): string {
  return (CHARSETS as Record<string, string>)[charset] ?? charset;
}

/** A compiled spec: what one code looks like and how many exist. */
export class CodeShape {
  readonly chars: string;
  readonly template: string;
  readonly randomChars: number;
  /** log2 of the number of distinct codes the shape allows (keeps huge spaces exact enough). */
  readonly spaceBits: number;

  constructor(readonly spec: GenerateSpec) {
    this.chars = charsetOf(spec.charset);
    this.template = spec.pattern ?? PLACEHOLDER.repeat(spec.length!);
    this.randomChars = [...this.template].filter((c) => c === PLACEHOLDER).length;
    this.spaceBits = this.randomChars * Math.log2(this.chars.length);
    const length = spec.prefix.length + this.template.length + (spec.checkChar ? 1 : 0) + spec.suffix.length;
    if (length > LIMITS.code)
      throw new DibsError(
        'invalid_input',
        `pattern: codes would be ${length} characters long, at most ${LIMITS.code}`,
        { field: 'pattern' },
      );
  }

  /** Distinct codes possible (Infinity beyond 2^53). */
  get space(): number {
    return this.spaceBits >= 53 ? Infinity : Math.round(2 ** this.spaceBits);
  }

  /** Refuses a request the pattern cannot satisfy safely: more than half its space. */
  assertFeasible(count: number, alreadyInPool = 0): void {
    const limit = Math.floor(this.space * MAX_SPACE_SHARE);
    if (count + alreadyInPool > limit) {
      throw new DibsError(
        'invalid_input',
        `count: ${count.toLocaleString('en-US')} codes${alreadyInPool ? ` (+${alreadyInPool.toLocaleString('en-US')} already in the pool)` : ''} is more than half of the ${this.space.toLocaleString('en-US')} codes the pattern allows (${this.chars.length} characters ^ ${this.randomChars} places); use a longer pattern or a larger charset`,
        { field: 'count', details: { space: this.space, maxCount: limit } },
      );
    }
  }

  /** `n` codes (may repeat each other or existing codes; the import dedupes). */
  generate(n: number): string[] {
    const N = this.chars.length;
    const accept = 256 - (256 % N); // bytes ≥ accept would bias toward the first characters
    const out: string[] = new Array(n);
    let pool = randomBytes(Math.max(64, n * this.randomChars * 2));
    let at = 0;
    const next = (): number => {
      for (;;) {
        if (at >= pool.length) {
          pool = randomBytes(pool.length);
          at = 0;
        }
        const b = pool[at++]!;
        if (b < accept) return b % N;
      }
    };
    for (let i = 0; i < n; i++) {
      const picks: number[] = [];
      let body = '';
      for (const c of this.template) {
        if (c === PLACEHOLDER) {
          const k = next();
          picks.push(k);
          body += this.chars[k];
        } else body += c;
      }
      out[i] =
        this.spec.prefix + body + (this.spec.checkChar ? this.chars[luhnCheck(picks, N)] : '') + this.spec.suffix;
    }
    return out;
  }

  /**
   * True when `code` has this shape and, with a check character, a correct one — the cheap test
   * a checkout can run on a typed code before asking the store.
   */
  verify(code: string): boolean {
    const { prefix, suffix, checkChar } = this.spec;
    if (!code.startsWith(prefix) || !code.endsWith(suffix)) return false;
    const middle = code.slice(prefix.length, code.length - suffix.length);
    if (middle.length !== this.template.length + (checkChar ? 1 : 0)) return false;
    const picks: number[] = [];
    for (let i = 0; i < this.template.length; i++) {
      const t = this.template[i]!;
      const c = middle[i]!;
      if (t === PLACEHOLDER) {
        const k = this.chars.indexOf(c);
        if (k < 0) return false;
        picks.push(k);
      } else if (c !== t) return false;
    }
    return !checkChar || this.chars.indexOf(middle[this.template.length]!) === luhnCheck(picks, this.chars.length);
  }
}

export function codeShape(input: GenerateInput): CodeShape {
  return new CodeShape(parseInput(generateSpecSchema, input));
}

/**
 * Luhn mod N: from the right, every second value is doubled (mapped back into 0..N-1 by a
 * permutation); the check value makes the total ≡ 0 mod N. A single substitution changes one
 * term by a non-zero amount mod N, so it is always caught.
 */
export function luhnCheck(values: readonly number[], N: number): number {
  let sum = 0;
  let double = true; // the check character itself will be the rightmost, undoubled position
  for (let i = values.length - 1; i >= 0; i--) {
    let v = values[i]!;
    if (double) {
      // doubling must permute 0..N-1: folding the digits does for even N (as in Luhn mod 10),
      // plain 2v mod N does for odd N (2 is invertible mod an odd N)
      v = N % 2 === 0 ? Math.floor((2 * v) / N) + ((2 * v) % N) : (2 * v) % N;
    }
    sum += v;
    double = !double;
  }
  return (N - (sum % N)) % N;
}

export interface GenerateResult {
  /** New codes now in the pool (always the requested count on success). */
  generated: number;
  /** Draws that collided with a code already in the pool (or an earlier draw) and were redrawn. */
  collisions: number;
}

export interface GenerateProgress {
  generated: number;
  collisions: number;
  count: number;
}

/** Codes drawn per round: one round is one streamed import (several backend batches). */
const ROUND = 50_000;
/**
 * Giving up needs BOTH many consecutive rounds adding under 1% of what they drew AND many codes
 * drawn in them: near the end a round asks for a single code, and 20 single draws all colliding
 * in a space still 10% free is a 12% chance — a spurious failure; 1,000 draws never are.
 */
const BARREN_ROUNDS = 20;
const BARREN_DRAWS = 1000;

/**
 * Draws codes and imports them (the import dedupes against the pool in its atomic batches) until
 * `count` NEW codes are in. A round that adds almost nothing means the space is used up by codes
 * already in the pool: stop with a clear error instead of spinning.
 */
export async function generateInto(
  importRound: (codes: string[]) => Promise<{ imported: number; duplicates: number }>,
  input: GenerateInput,
  onProgress?: (p: GenerateProgress) => void,
): Promise<GenerateResult> {
  const shape = codeShape(input);
  const { count } = shape.spec;
  shape.assertFeasible(count);
  let generated = 0;
  let collisions = 0;
  let barren = 0;
  let barrenDraws = 0;
  while (generated < count) {
    const asked = Math.min(ROUND, count - generated);
    // sorted, so each import batch touches neighbouring index pages instead of random ones
    const { imported, duplicates } = await importRound(shape.generate(asked).sort());
    generated += imported;
    collisions += duplicates;
    onProgress?.({ generated, collisions, count });
    // rounds that add (almost) nothing, many in a row: the space is used up, not unlucky
    const fruitless = imported === 0 || imported < asked / 100;
    barren = fruitless ? barren + 1 : 0;
    barrenDraws = fruitless ? barrenDraws + asked : 0;
    if (barren >= BARREN_ROUNDS && barrenDraws >= BARREN_DRAWS && generated < count) {
      throw new DibsError(
        'conflict',
        `count: only ${generated.toLocaleString('en-US')} of ${count.toLocaleString('en-US')} codes could be generated — the pattern's space is nearly used up by codes already in the pool; use a longer pattern`,
        { field: 'count', details: { generated, collisions } },
      );
    }
  }
  return { generated, collisions };
}
