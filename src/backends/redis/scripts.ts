/**
 * Lua scripts live as .lua files beside this module, each with a header documenting KEYS/ARGV
 * and replies. The loader prepends the shared fragment (lib.lua), runs scripts by SHA
 * (EVALSHA) and falls back to EVAL when the server answers NOSCRIPT (after a restart or
 * failover, or on a cluster node that never saw the script).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';
import { needsAcks, runAcked } from './acks.js';
import { usedParts } from './script-parts.js';

export type RedisClient = Redis | Cluster;

export const SCRIPT_NAMES = [
  'create',
  'update',
  'insert',
  'claim',
  'release',
  'redeem',
  'unredeem',
  'revoke',
  'hold',
  'hold_release',
  'code_window',
  'multi_add',
  'multi_redeem',
  'multi_unredeem',
  'lock_acquire',
  'lock_acquire_fair',
  'limit_take',
  'lock_renew',
  'lock_release',
  'lock_inspect',
  'counter_incr',
  'counter_get',
  'sale_register',
  'sale_prepare',
  'sale_create',
  'sale_update',
  'sale_cancel',
  'sale_get',
  'sale_buy',
  'sale_reserve',
  'sale_confirm',
  'sale_cancel_hold',
  'sale_hold',
  'sale_holds',
  'sale_sweep',
  'sale_activate',
  'sale_end',
  'sale_wish',
  'sale_audit',
  'outbox_peek',
  'outbox_lease',
  'outbox_settle',
  'outbox_status',
  'outbox_dead',
  'outbox_retry',
  'forecast_pool',
  'sale_forecast',
  'forecast_step',
  'sale_room_enable',
  'sale_room_step',
  'sale_room_reserve',
  'api_key_insert',
  'rate_limit_hit',
  'cart_hold',
  'cart_confirm',
  'cart_cancel',
  'cart_get',
] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

/** A script ready to run: its full source (fragments first) and that source's SHA-1 for EVALSHA. */
export interface Script {
  name: string;
  source: string;
  sha: string;
}

function load(name: string, dir: URL = OWN_DIR): string {
  return readFileSync(new URL(`${name}.lua`, dir), 'utf8');
}

/**
 * A script's source (lib.lua, its family's fragments — sale_*.lua and outbox_*.lua have one, cart_*.lua
 * two — and its own file; of lib.lua and the fragments only the functions the script calls,
 * script-parts.ts) and SHA, read on its first use: a cold process that only claims reads and hashes
 * one script, not all of them.
 */
const FRAGMENTS: Record<string, string[]> = {
  sale_: ['sale_lib'],
  outbox_: ['outbox_lib'],
  cart_: ['sale_lib', 'cart_lib'],
};
const OWN_DIR = new URL('./scripts/', import.meta.url);
const fragments = new Map<string, string>();
const fragment = (name: string) => fragments.get(name) ?? fragments.set(name, load(name)).get(name)!;

function build(name: string, dir: URL): Script {
  const family = Object.keys(FRAGMENTS).find((head) => name.startsWith(head));
  const body = load(name, dir);
  // Each fragment trimmed to the functions the script, or a later fragment's kept part, calls: a
  // later fragment (cart_lib) may call an earlier one (sale_lib), never the other way round.
  const kept: string[] = [];
  let users = body;
  for (const f of [...(family ? FRAGMENTS[family]! : [])].reverse()) {
    const part = usedParts(fragment(f), users, `${f}.lua`);
    kept.unshift(`-- ${f}.lua`, part);
    users = `${part}\n${users}`;
  }
  const parts = [usedParts(fragment('lib'), users, 'lib.lua'), ...kept, `-- ${name}.lua`];
  const source = `${parts.join('\n')}\n${body}`;
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/**
 * Loads `<dir>/<name>.lua` for each name, with the shared fragments in front. Scripts of another
 * module (tiered/scripts/) live beside the code that runs them and are loaded through this.
 */
export function loadScripts<N extends string>(dir: URL, names: readonly N[]): Record<N, Script> {
  return Object.fromEntries(names.map((name) => [name, build(name, dir)])) as Record<N, Script>;
}

const own = new Map<ScriptName, Script>();
const scriptOf = (name: ScriptName) => own.get(name) ?? own.set(name, build(name, OWN_DIR)).get(name)!;

/** Runs one of this module's scripts by name, or a script another module loaded with loadScripts. */
export async function runScript(
  client: RedisClient,
  which: ScriptName | Script,
  keys: string[],
  args: (string | number)[],
): Promise<unknown> {
  const script = typeof which === 'string' ? scriptOf(which) : which;
  // Under `acks=replicas:N`, a writing script is answered only once replicas have it (acks.ts).
  if (needsAcks(client, script.name)) return runAcked(client, script.sha, script.source, keys, args);
  try {
    return await client.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!String((error as Error).message).startsWith('NOSCRIPT')) throw error;
    return client.eval(script.source, keys.length, ...keys, ...args);
  }
}
