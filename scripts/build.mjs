// Compiles src/ to dist/ and copies the non-TypeScript assets (.sql, .lua, .html, .css, and the
// dashboard's browser scripts, src/dashboard/public/*.js) that modules load at run time from beside themselves.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, readFileSync, rmSync, readdirSync, statSync, mkdirSync } from 'node:fs';
import { join, dirname, extname } from 'node:path';
import { createRequire } from 'node:module';

const root = new URL('..', import.meta.url).pathname;
const require = createRequire(import.meta.url);
const ASSET_EXTENSIONS = new Set(['.sql', '.lua', '.html', '.css', '.svg', '.js']);

rmSync(join(root, 'dist'), { recursive: true, force: true });
const tsc = join(dirname(require.resolve('typescript/package.json')), 'bin', 'tsc');
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit', cwd: root });

function copyAssets(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) copyAssets(path);
    else if (ASSET_EXTENSIONS.has(extname(name))) {
      const target = join(root, 'dist', path.slice(join(root, 'src').length));
      mkdirSync(dirname(target), { recursive: true });
      cpSync(path, target);
    }
  }
}
copyAssets(join(root, 'src'));

// tsc writes files without the execute bit. `npx dibs` execs the bin's target itself (npm set the bit
// when it linked the bin, once), so a rebuild that left it off made the CLI "Permission denied".
const { bin } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
for (const target of Object.values(bin ?? {})) chmodSync(join(root, target), 0o755);
