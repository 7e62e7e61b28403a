/**
 * A script's refusal, `{'refused', reason, field, value, …}`: its reason id from core/refusals.ts
 * and the context it names (numbers come as integer replies) over what the request already says.
 * The one factory builds the error.
 */
import type { DibsError } from '../../core/errors.js';
import { scriptRefusal } from '../../core/refusals.js';

export function refusedReply(reply: unknown[], request: Record<string, unknown>): DibsError {
  const context: Record<string, unknown> = { ...request };
  for (let i = 2; i + 1 < reply.length; i += 2) context[String(reply[i])] = reply[i + 1];
  return scriptRefusal(reply[1], context);
}
