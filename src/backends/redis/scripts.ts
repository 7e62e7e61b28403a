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

export type RedisClient = Redis | Cluster;

export const SCRIPT_NAMES = [
  'create', 'update', 'insert', 'claim', 'release', 'redeem', 'unredeem', 'revoke',
  'hold', 'hold_release', 'code_window', 'multi_add', 'multi_redeem', 'multi_unredeem',
  'lock_acquire', 'lock_acquire_fair', 'lock_renew', 'lock_release', 'lock_inspect', 'counter_incr', 'counter_get',
  'tiered_take', 'tiered_install', 'tiered_return', 'tiered_seal',
  'sale_register', 'sale_prepare', 'sale_create', 'sale_update', 'sale_cancel', 'sale_get', 'sale_buy', 'sale_reserve',
  'sale_confirm', 'sale_cancel_hold', 'sale_hold', 'sale_sweep', 'sale_activate', 'sale_end', 'sale_wish', 'sale_audit',
  'outbox_peek', 'outbox_lease', 'outbox_settle', 'outbox_status', 'forecast_pool', 'sale_forecast', 'forecast_step',
  'sale_room_enable', 'sale_room_step', 'sale_room_reserve',
] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

interface Script {
  source: string;
  sha: string;
}

function load(name: string): string {
  return readFileSync(new URL(`./scripts/${name}.lua`, import.meta.url), 'utf8');
}

/**
 * A script's source (lib.lua, its family's fragment — sale_*.lua and outbox_*.lua have one — and
 * its own file) and SHA, read on its first use: a cold process that only claims reads and hashes
 * one script, not all of them.
 */
const FRAGMENTS = ['sale_', 'outbox_'] as const;
const sources = new Map<string, string>();
const source = (name: string) => sources.get(name) ?? sources.set(name, load(name)).get(name)!;
const scripts = new Map<ScriptName, Script>();

function scriptOf(name: ScriptName): Script {
  let script = scripts.get(name);
  if (!script) {
    const fragment = FRAGMENTS.find((head) => name.startsWith(head));
    const text = `${source('lib')}\n${fragment ? `-- ${fragment}lib.lua\n${source(`${fragment}lib`)}\n` : ''}-- ${name}.lua\n${load(name)}`;
    script = { source: text, sha: createHash('sha1').update(text).digest('hex') };
    scripts.set(name, script);
  }
  return script;
}

export async function runScript(client: RedisClient, name: ScriptName, keys: string[], args: (string | number)[]): Promise<unknown> {
  const script = scriptOf(name);
  // Under `acks=replicas:N`, a writing script is answered only once replicas have it (acks.ts).
  if (needsAcks(client, name)) return runAcked(client, script.sha, script.source, keys, args);
  try {
    return await client.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!String((error as Error).message).startsWith('NOSCRIPT')) throw error;
    return client.eval(script.source, keys.length, ...keys, ...args);
  }
}
