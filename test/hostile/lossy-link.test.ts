/**
 * Random packet loss between hosts, without netem (this kernel has none): nftables rules on the
 * store host (test/support/netns.ts `lose`) drop each packet a worker host sends, and each packet
 * the store sends it, with a fixed probability (`numgen random mod 100 < N`: 30 % in CI, 10 % and
 * 30 % under FAULTS_LONG=1), while a claim storm,
 * a flash sale and a lock storm run from two worker hosts (2 processes each) against a test-owned
 * PostgreSQL and redis-server on the store host. TCP retransmits what is lost, so the link turns
 * slow and bursty (retransmission timeouts from 200 ms, doubling); a call whose answer does not
 * come back within the client's timeout fails `unavailable`. Judged by the client-side record
 * (test/support/link-rounds.ts): claims by the product's verifier, buys by the sale ledger, locks by
 * the history checker on a fenced table reached over the same lossy links.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LONG } from '../support/faults.js';
import { buyRound, claimRound, type LinkRound, lockRound, type StoreKind } from '../support/link-rounds.js';
import { netnsUnavailable } from '../support/netns.js';
import { startClusterOn, type HostCluster } from '../support/netns-cluster.js';
import { hostileNetworkForSuite } from '../support/netns-suite.js';

const skip = netnsUnavailable();
// Per packet, each direction. At 10 % TCP hides the loss within the clients' timeouts (slower,
// nothing interrupted); at 30 % retransmission back-off outlasts some of them: `unavailable`.
for (const LOSS of LONG ? [10, 30] : [30])
  describe(`claims, buys and locks over links losing ${LOSS} % of packets`, {
    skip: skip ?? false,
    timeout: 900_000,
  }, () => {
    const env = hostileNetworkForSuite();
    let cluster: HostCluster | undefined;
    const round = (kind: StoreKind): LinkRound => {
      let dropped = 0;
      return {
        get env() {
          return env();
        },
        kind,
        get cluster() {
          return cluster;
        },
        storeAt: (i, tag) =>
          kind === 'postgres'
            ? `${env().pg.urlAt(env().links[i]!.addressA)}?schema=${tag}&poolSize=4&queryTimeoutMs=3000&connectTimeoutMs=3000`
            : kind === 'redis'
              ? `${env().redis.urlAt(env().links[i]!.addressA)}?prefix=${tag}&commandTimeoutMs=2000`
              : // the worker host's forwarder carries every node's port over its own (lossy) link
                `${cluster!.url}?prefix=${tag}&commandTimeoutMs=2000`,
        resourceAt: (i) => env().pg.urlAt(env().links[i]!.addressA),
        fault: () => {
          for (const link of env().links) env().net.lose(link, LOSS);
        },
        heal: () => {
          dropped = env().links.reduce((n, link) => n + env().net.dropped(link), 0);
          for (const link of env().links) env().net.heal(link);
        },
        report: () => `${LOSS} % loss each way, ${dropped} packets dropped`,
        felt: () => assert.ok(dropped > 0, 'the links dropped packets'),
        size: LONG
          ? { claimants: 12_000, buyers: 2400, lockMs: 60_000 }
          : kind === 'redis-cluster'
            ? { claimants: 400, buyers: 400, lockMs: 8000, paceMs: 25 }
            : { claimants: 800, buyers: 400, lockMs: 8000 },
      };
    };
    // CI (the time budget) runs the Redis claim rounds only (the Cluster's smaller, paced); FAULTS_LONG=1
    // runs all nine, larger
    const ci = (kind: StoreKind, op: string) =>
      LONG || (kind !== 'postgres' && op === 'claims') ? false : 'FAULTS_LONG=1 only';
    const rounds = (kind: StoreKind) => {
      it(`${kind}: claim storm from two hosts — client ledger clean`, { skip: ci(kind, 'claims') }, () =>
        claimRound(round(kind), kind),
      );
      it(
        `${kind}: flash sale from two hosts — every acknowledged order kept, sold ≤ cap`,
        { skip: ci(kind, 'buys') },
        () => buyRound(round(kind), kind),
      );
      it(`${kind}: lock storm from two hosts, TTL 1.5 s — history valid`, { skip: ci(kind, 'locks') }, () =>
        lockRound(round(kind), kind),
      );
    };
    rounds('postgres');
    rounds('redis');
    describe('a 3-master Redis Cluster on the store host', () => {
      before(async () => {
        cluster = await startClusterOn(env().store, env().links);
      });
      after(async () => {
        await cluster?.stop();
        cluster = undefined;
      });
      rounds('redis-cluster');
    });
  });
