/**
 * A PostgreSQL step's refusal: the function answers a reason id from core/refusals.ts as its
 * outcome and the context it knows as `ctx` (jsonb, named as the reason names it); the request
 * adds what the caller already knows (the sale, the customer). The one factory builds the error.
 */
import type { DibsError } from '../../core/errors.js';
import { scriptRefusal } from '../../core/refusals.js';

export function refusedRow(
  reason: string,
  ctx: Record<string, unknown> | null,
  request: Record<string, unknown>,
): DibsError {
  return scriptRefusal(reason, { ...request, ...ctx });
}
