/** One step's answer, from the store or from the model, and how the two are compared. */
import assert from 'node:assert/strict';
import { DibsError, isDibsError } from '../../src/core/errors.js';

/** `message: null`: the model knows the refusal's code only (a state each store phrases itself). */
export type Outcome = { ok: true; value: unknown } | { ok: false; code: string; message: string | null };

/** A refusal the model names by its code only. */
export class CodeOnly extends Error {
  constructor(readonly code: string) {
    super(code);
  }
}

/** The store's answer: its result, or the refusal it threw (anything else is a failure of the test). */
export async function attempt(step: () => Promise<unknown>): Promise<Outcome> {
  try {
    return { ok: true, value: await step() };
  } catch (error) {
    if (!isDibsError(error)) throw error;
    return { ok: false, code: error.code, message: error.message };
  }
}

/** The model's answer. */
export function judged(step: () => unknown): Outcome {
  try {
    return { ok: true, value: step() };
  } catch (error) {
    if (error instanceof CodeOnly) return { ok: false, code: error.code, message: null };
    if (!(error instanceof DibsError)) throw error;
    return { ok: false, code: error.code, message: error.message };
  }
}

/** How often each step answered what (DIBS_MODEL_STATS=1 prints it): a check that never reaches a refusal proves nothing about it. */
export const tally = new Map<string, number>();

/** The same answer: both ok, or the same refusal code (and message, when the model phrases it). */
export function sameAnswer(what: string, store: Outcome, model: Outcome, kind = ''): void {
  const key = `${kind}${what.split(' ')[2]!.slice(7).split('"')[0]} ${store.ok ? 'ok' : store.code}`;
  tally.set(key, (tally.get(key) ?? 0) + 1);
  const withMessage = !model.ok && model.message !== null;
  const view = (o: Outcome) => (o.ok ? 'ok' : withMessage ? { code: o.code, message: o.message } : { code: o.code });
  assert.deepEqual(view(store), view(model), `${what}: the store and the model disagree`);
}
