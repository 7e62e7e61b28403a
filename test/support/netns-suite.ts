/**
 * For a describe block: a store host running a test-owned PostgreSQL and redis-server, and two
 * worker hosts each linked to it (test/support/netns.ts, netns-stores.ts); set up in before(),
 * torn down in after() — namespaces, veths, rules and store processes — even when a test failed.
 * The getters are valid once before() ran.
 */
import { after, before } from 'node:test';
import { Network, type Host, type Link } from './netns.js';
import { startPostgresOn, startRedisOn, type HostPostgres, type HostRedis } from './netns-stores.js';

export interface HostileNetwork {
  net: Network;
  store: Host;
  hosts: Host[];
  links: Link[];
  pg: HostPostgres;
  redis: HostRedis;
}

export function hostileNetworkForSuite(): () => HostileNetwork {
  let env: Partial<HostileNetwork> = {};
  before(async () => {
    const net = new Network();
    env.net = net;
    env.store = net.host('store');
    env.hosts = [net.host('w1'), net.host('w2')];
    env.links = env.hosts.map((h) => net.link(env.store!, h));
    env.pg = await startPostgresOn(env.store);
    env.redis = await startRedisOn(env.store);
  });
  after(async () => {
    await env.pg?.stop();
    await env.redis?.stop();
    await env.net?.teardown();
    env = {};
  });
  return () => {
    if (!env.redis) throw new Error('the hostile network is set up in before()');
    return env as HostileNetwork;
  };
}
