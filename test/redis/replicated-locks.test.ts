/**
 * The lock conformance suite, unchanged, on the replicated topologies with replica
 * acknowledgement: a Sentinel-managed master with 2 replicas and a Cluster of 3 masters + 3
 * replicas, both with `acks=replicas:1` (every lock step answered once a replica has it).
 */
import { after, before, describe } from 'node:test';
import { openDibs } from '../../src/index.js';
import { lockConformance } from '../conformance/locks.js';
import { redisServerInstalled, startCluster, testPrefix, type OwnedCluster } from '../support/redis.js';
import { startSentinelSetup, type SentinelSetup } from '../support/replicas.js';

const installed = redisServerInstalled();

describe('redis sentinel + acks=replicas:1: locks', { skip: !installed, timeout: 300_000 }, () => {
  let setup: SentinelSetup | undefined;
  before(async () => {
    setup = await startSentinelSetup({ replicas: 2, delayMs: 0 });
  });
  after(async () => {
    await setup?.stop();
  });
  lockConformance('redis sentinel', async () => {
    const dibs = await openDibs(`${setup!.url}?prefix=${testPrefix()}&acks=replicas:1`);
    return { dibs, cleanup: () => dibs.close() };
  });
});

describe('redis cluster with replicas + acks=replicas:1: locks', { skip: !installed, timeout: 300_000 }, () => {
  let cluster: OwnedCluster | undefined;
  before(async () => {
    cluster = await startCluster(['--appendonly', 'no'], { replicas: 1 });
  });
  after(async () => {
    await cluster?.stop();
  });
  lockConformance('redis cluster with replicas', async () => {
    const dibs = await openDibs(`${cluster!.url}?prefix=${testPrefix()}&acks=replicas:1`);
    return { dibs, cleanup: () => dibs.close() };
  });
});
