/** src/client/types.ts is generated from /openapi.json; a stale copy fails here. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';
import { CLIENT_TYPES_PATH, generateClientTypes } from '../../scripts/gen-client-types.js';

it('src/client/types.ts is what scripts/gen-client-types.ts generates from the current OpenAPI document', async () => {
  const committed = readFileSync(CLIENT_TYPES_PATH, 'utf8');
  const fresh = await generateClientTypes();
  assert.ok(
    committed === fresh,
    'src/client/types.ts is stale: run `node --import tsx scripts/gen-client-types.ts` and commit the result',
  );
});
