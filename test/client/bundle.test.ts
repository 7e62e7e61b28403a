/**
 * `dibs/client` must run where only `fetch` exists (Workers, Vercel Edge, Deno): bundled by esbuild
 * for the neutral platform with nothing external, any Node built-in (`node:*`, `fs`, `crypto`, …)
 * or npm dependency it pulls in fails the build or shows up as an import of the bundle.
 */
import assert from 'node:assert/strict';
import { builtinModules } from 'node:module';
import { describe, it } from 'node:test';
import vm from 'node:vm';
import { build } from 'esbuild';
import { serveOverHttp } from '../support/client.js';
import { openTempSqlite } from '../support/sqlite.js';

const entry = new URL('../../src/client/index.ts', import.meta.url).pathname;

export async function bundleClient(stdin?: string) {
  return build({
    ...(stdin
      ? { stdin: { contents: stdin, resolveDir: new URL('.', import.meta.url).pathname, loader: 'ts' } }
      : { entryPoints: [entry] }),
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
    assert.ok(
      inputs.every((f) => f.startsWith('src/') || f.includes('/src/')),
      `only dibs sources: ${inputs.join(', ')}`,
    );
    assert.ok(
      !inputs.some((f) => f.includes('node_modules')),
      `no dependency: ${inputs.filter((f) => f.includes('node_modules')).join(', ')}`,
    );
    const imports = Object.values(result.metafile.outputs).flatMap((o) => o.imports.map((i) => i.path));
    assert.deepEqual(imports, [], 'the bundle imports nothing');
    const text = result.outputFiles[0]!.text;
    const nodeGlobal = /\bprocess\.|\bBuffer\b|require\(/.exec(text);
    assert.equal(nodeGlobal?.[0], undefined, 'no Node globals');
    assert.ok(text.length < 60_000, `small: ${text.length} bytes`);
  });

  it('the check fails for code that pulls in a Node built-in', async () => {
    const builtins = new Set(builtinModules);
    assert.ok(builtins.has('crypto'));
    await assert.rejects(
      bundleClient(`import { createHash } from 'node:crypto'; export const h = createHash;`),
      /node:crypto|Could not resolve/,
    );
  });

  it('runs in a context that has only the Web platform globals of an edge runtime (no process, Buffer, require)', async () => {
    const env = await openTempSqlite();
    const served = await serveOverHttp(env.dibs);
    try {
      await env.dibs.pools.create({ name: 'edge' });
      await env.dibs.pools.importCodes('edge', ['EDGE-1']);
      const bundle = await build({
        entryPoints: [entry],
        bundle: true,
        platform: 'neutral',
        format: 'iife',
        globalName: 'dibsClient',
        write: false,
        logLevel: 'silent',
      });
      // What Workers / Vercel Edge give a script: fetch, AbortController, timers, Web Crypto, URL, text codecs.
      const edge = vm.createContext({
        fetch,
        Request,
        Response,
        Headers,
        AbortController,
        AbortSignal,
        setTimeout,
        clearTimeout,
        crypto: globalThis.crypto,
        URL,
        TextEncoder,
        TextDecoder,
        console,
      });
      vm.runInContext(bundle.outputFiles[0]!.text, edge);
      assert.equal(
        vm.runInContext('typeof process + typeof Buffer + typeof require', edge),
        'undefinedundefinedundefined',
      );
      const claim = (await vm.runInContext(
        `dibsClient.createClient({ baseUrl: ${JSON.stringify(served.baseUrl)}, apiKey: ${JSON.stringify(served.apiKey)} }).pools.claim('edge', 'worker-user')`,
        edge,
      )) as { code: string };
      assert.equal(claim.code, 'EDGE-1');
      const error = await vm.runInContext(
        `dibsClient.createClient({ baseUrl: ${JSON.stringify(served.baseUrl)}, apiKey: ${JSON.stringify(served.apiKey)} }).pools.claim('edge', 'late').catch((e) => ({ name: e.name, code: e.code }))`,
        edge,
      );
      assert.deepEqual({ ...(error as object) }, { name: 'DibsError', code: 'sold_out' });
    } finally {
      await served.close();
      await env.cleanup();
    }
  });
});
