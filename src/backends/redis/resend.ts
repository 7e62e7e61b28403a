/**
 * ioredis re-sends a script that was in flight when its connection dropped, so the store may run
 * one request twice and the caller sees only the second run's reply. A script that cannot tell a
 * re-send from the state it leaves (an order, a lease token, a code's record) is given a request
 * id: its first run remembers the reply under that id for REPLAY_MS in the script's own slot
 * (lib.lua replay_reply / remember_reply) and a re-send answers it instead of acting again.
 */
import { randomId } from '../shared/random-ids.js';

/**
 * How long a reply is remembered. A re-send happens while the command still waits for its reply,
 * and a command waits at most `commandTimeoutMs` (15 s by default): a minute covers the default
 * with room for reconnect back-off.
 */
export const REPLAY_MS = 60_000;

/** A new request id: 16 random bytes, URL-safe. */
export const requestId = (): string => randomId(16);

/** The key remembering one request's reply, beside `key` and in its hash slot (same tag). */
export const replayKey = (key: string, id: string): string => `${key}:rs:${id}`;
