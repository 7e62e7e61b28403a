/** The pool conformance suite, unchanged, on the shared Redis (single node, own key prefix) and on a test-owned 3-master Cluster. */
import { poolConformance } from '../conformance/pools.js';
import { onRedisStores } from '../support/redis.js';

await onRedisStores(poolConformance);
