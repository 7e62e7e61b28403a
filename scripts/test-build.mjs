// A compiled copy of the sources the tests' worker processes run (src/, test/support/, bench/lib/,
// with test/fixtures/ and package.json, which modules read from beside themselves),
// made once per test run by scripts/test.mjs. A worker started through tsx pays ~0.8 s more CPU
// than plain Node on compiled files (tsx's loader thread and its transform of each module), and a
// run starts hundreds of them; test/support/node-worker.ts picks the copy while it is current.
//
// Each file is compiled alone by the same esbuild tsx uses, with the project's tsconfig options,
// so a worker runs what tsx would have given it; other files are copied, so paths a module
// resolves beside itself (SQL, Lua, C sources) work there too. The copy lives inside the checkout
// (.test-build/<run>) so that imports of packages resolve to its node_modules.
import { cpSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';

const DIRS = ['src', 'test/support', 'test/fixtures', 'bench/lib'];
// read by modules from their place in the tree (the service's version)
const FILES = ['package.json'];

/** Compiles into `<root>/.test-build/<run>/` and returns that directory; `remove()` deletes it. */
export function buildTestCopy(root) {
  const require = createRequire(import.meta.url);
  // tsx's own esbuild: the transform tsx would apply
  const esbuild = createRequire(require.resolve('tsx'))('esbuild');
  const { compilerOptions } = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8'));
  const tsconfigRaw = { compilerOptions: { ...compilerOptions, noEmit: undefined } };
  const startedAt = Date.now();
  const out = join(root, '.test-build', `${process.pid}-${startedAt}`);
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        walk(path);
        continue;
      }
      const target = join(out, relative(root, path));
      mkdirSync(dirname(target), { recursive: true });
      if (path.endsWith('.ts') && !path.endsWith('.d.ts')) {
        const { code } = esbuild.transformSync(readFileSync(path, 'utf8'), {
          loader: 'ts',
          format: 'esm',
          target: 'node20',
          sourcemap: 'inline',
          sourcefile: path,
          tsconfigRaw,
        });
        writeFileSync(target.replace(/\.ts$/, '.js'), code);
      } else cpSync(path, target);
    }
  };
  for (const dir of DIRS) walk(join(root, dir));
  for (const file of FILES) cpSync(join(root, file), join(out, file));
  // written last, once the copy is whole: what it holds and when it began (node-worker.ts runs the
  // sources when one of them changed since)
  writeFileSync(join(out, 'built.json'), `${JSON.stringify({ startedAt, sources: [...DIRS, ...FILES] })}\n`);
  return { dir: out, remove: () => rmSync(out, { recursive: true, force: true }) };
}
