/**
 * Lua scripts live as .lua files beside this module, each with a header documenting KEYS/ARGV
 * and replies. The loader prepends the shared fragment (lib.lua), runs scripts by SHA
 * (EVALSHA) and falls back to EVAL when the server answers NOSCRIPT (after a restart or
 * failover, or on a cluster node that never saw the script).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Cluster, Redis } from 'ioredis';

export type RedisClient = Redis | Cluster;

export const SCRIPT_NAMES = [
  'create', 'update', 'insert', 'claim', 'release', 'redeem', 'unredeem', 'revoke',
  'lock_acquire', 'lock_renew', 'lock_release', 'lock_inspect', 'counter_incr', 'counter_get',
] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

interface Script {
  source: string;
  sha: string;
}

function load(name: string): string {
  return readFileSync(new URL(`./scripts/${name}.lua`, import.meta.url), 'utf8');
}

const LIB = load('lib');
const SCRIPTS = Object.fromEntries(
  SCRIPT_NAMES.map((name) => {
    const source = `${LIB}\n-- ${name}.lua\n${load(name)}`;
    return [name, { source, sha: createHash('sha1').update(source).digest('hex') }];
  }),
) as Record<ScriptName, Script>;

export async function runScript(client: RedisClient, name: ScriptName, keys: string[], args: (string | number)[]): Promise<unknown> {
  const script = SCRIPTS[name];
  try {
    return await client.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!String((error as Error).message).startsWith('NOSCRIPT')) throw error;
    return client.eval(script.source, keys.length, ...keys, ...args);
  }
}
