/**
 * The waiting-room conformance suite, unchanged, on the shared Redis (single node, own key prefix)
 * and on a 3-master Redis Cluster started by the test.
 */
import { waitingRoomConformance } from '../conformance/waiting-room.js';
import { onRedisStores } from '../support/redis.js';

await onRedisStores(waitingRoomConformance);
