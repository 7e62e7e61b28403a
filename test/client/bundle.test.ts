/**
 * `dibs/client` must run where only `fetch` exists (Workers, Vercel Edge, Deno): bundled by esbuild
 * for the neutral platform with nothing external, any Node built-in (`node:*`, `fs`, `crypto`, …)
 * or npm dependency it pulls in fails the build or shows up as an import of the bundle.
 */
import assert from 'node:assert/strict';
import { builtinModules } from 'node:module';
import { describe, it } from 'node:test';
import { build } from 'esbuild';

const entry = new URL('../../src/client/index.ts', import.meta.url).pathname;

export async function bundleClient(stdin?: string) {
  return build({
    ...(stdin ? { stdin: { contents: stdin, resolveDir: new URL('.', import.meta.url).pathname, loader: 'ts' } } : { entryPoints: [entry] }),
    bundle: true,
    platform: 'neutral',
    format: 'esm',
    write: false,
    metafile: true,
    logLevel: 'silent',
    mainFields: ['module', 'main'],
  });
}

describe('dibs/client bundle', () => {
  it('bundles for a neutral platform with no Node built-in and no dependency', async () => {
    const result = await bundleClient();
    const inputs = Object.keys(result.metafile.inputs);
    assert.ok(inputs.every((f) => f.startsWith('src/') || f.includes('/src/')), `only dibs sources: ${inputs.join(', ')}`);
    assert.ok(!inputs.some((f) => f.includes('node_modules')), `no dependency: ${inputs.filter((f) => f.includes('node_modules')).join(', ')}`);
    const imports = Object.values(result.metafile.outputs).flatMap((o) => o.imports.map((i) => i.path));
    assert.deepEqual(imports, [], 'the bundle imports nothing');
    const text = result.outputFiles[0]!.text;
    assert.doesNotMatch(text, /\bprocess\.|\bBuffer\b|require\(/, 'no Node globals');
    assert.ok(text.length < 60_000, `small: ${text.length} bytes`);
  });

  it('the check fails for code that pulls in a Node built-in', async () => {
    const builtins = new Set(builtinModules);
    assert.ok(builtins.has('crypto'));
    await assert.rejects(bundleClient(`import { createHash } from 'node:crypto'; export const h = createHash;`), /node:crypto|Could not resolve/);
  });
});
