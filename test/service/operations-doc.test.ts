/**
 * docs/operations.md must not drift from the code: every setting of `serviceConfigSchema`, every
 * environment variable of the ENV map and of the delivery channels, and every metric is named
 * there, and the JSON config example (the ```json block after the `operations-doc:config-example`
 * marker) loads through `loadServiceConfig` and sets every key but `demo`.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ENV, loadServiceConfig, serviceConfigSchema } from '../../src/service/config.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MARKER = '<!-- operations-doc:config-example';
const doc = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
const source = (path: string) => readFileSync(join(ROOT, path), 'utf8');

function configExample(): string {
  const at = doc.indexOf(MARKER);
  assert.ok(at >= 0, `docs/operations.md has no ${MARKER} … --> marker`);
  const block = /```json\n([\s\S]*?)```/.exec(doc.slice(at));
  assert.ok(block, 'no ```json block after the config-example marker');
  return block[1]!;
}

describe('docs/operations.md', () => {
  it('names every key of serviceConfigSchema', () => {
    const missing = Object.keys(serviceConfigSchema.shape).filter((key) => !doc.includes(`\`${key}\``));
    assert.deepEqual(missing, [], `settings missing from docs/operations.md: ${missing.join(', ')}`);
  });

  it('names every environment variable of the ENV map, and the delivery variables server.ts reads', () => {
    const delivery = [
      ...new Set([...source('src/service/server.ts').matchAll(/env\.(DIBS_[A-Z_]+)/g)].map((m) => m[1]!)),
    ];
    assert.ok(delivery.includes('DIBS_WEBHOOK_SECRET'), 'the delivery variables were not found in server.ts');
    const missing = [...Object.keys(ENV), ...delivery, 'DIBS_CONFIG'].filter((name) => !doc.includes(`\`${name}\``));
    assert.deepEqual(missing, [], `environment variables missing from docs/operations.md: ${missing.join(', ')}`);
  });

  it('names every metric of src/service/metrics.ts', () => {
    const metrics = [...source('src/service/metrics.ts').matchAll(/name: '(dibs_[a-z_]+)'/g)].map((m) => m[1]!);
    assert.ok(metrics.length >= 7, `found only ${metrics.length} metrics in metrics.ts`);
    const missing = metrics.filter((name) => !doc.includes(`\`${name}\``));
    assert.deepEqual(missing, [], `metrics missing from docs/operations.md: ${missing.join(', ')}`);
  });

  it('its JSON config example loads through loadServiceConfig({ file }) and sets every key but demo', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dibs-ops-doc-'));
    try {
      const file = join(dir, 'dibs.json');
      writeFileSync(file, configExample());
      const config = loadServiceConfig({ file, env: {} }); // env: {} — only the file counts
      const example = JSON.parse(configExample()) as Record<string, unknown>;
      const unset = Object.keys(serviceConfigSchema.shape).filter((key) => key !== 'demo' && !(key in example));
      assert.deepEqual(unset, [], `keys the example leaves out: ${unset.join(', ')}`);
      assert.equal(config.demo, false);
      for (const [key, value] of Object.entries(example))
        assert.deepEqual(config[key as keyof typeof config], value, key);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
