import { lifecycleConformance } from '../conformance/lifecycle.js';
import { onRedisStores } from '../support/redis.js';

await onRedisStores(lifecycleConformance);
