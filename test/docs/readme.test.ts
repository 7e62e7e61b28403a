/**
 * The README is a test: its examples run, in order, as a newcomer would run them on a fresh clone,
 * and each documented output (`# → …`, `// → …`, the start-up banner) is checked.
 *
 * What is exercised: a copy of the tree in a temporary directory (the clone) built from scratch;
 * `npm start` in the background on a free port (SQLite, `serve --demo`); every command of the
 * README's ```sh blocks through `sh`, with the key `npm start` printed and that port; every
 * ```ts block as a module run by Node (through tsx) in an app directory where dibs is installed
 * as `npm install path/to/dibs` installs it (a link); every `npx dibs …` by exec'ing the clone's
 * bin target itself, as npx does once it has linked it — so a build that leaves dist/cli/main.js
 * without its execute bit fails here — and once through the real npx (offline, private cache)
 * after `npm test`'s rebuild. Then the flags every `dibs …` of README.md and docs/*.md names must
 * be in that command's `--help`, and the routes of the README's HTTP table in /openapi.json.
 *
 * What is simulated: `npm install` is the tree's own node_modules linked in plus the `prepare`
 * script (the build); `npm test` is its first step only, the rebuild (the suite is this suite).
 * `<code>`, `<sale>` and `<id>` in a command are what an earlier command printed. Blocks or
 * commands marked "(not run by the README test: …)" are not run (their flags are still checked).
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import {
  BLOCK_NOT_RUN,
  NOT_RUN,
  codeBlocks,
  leadingShape,
  matchJsonShape,
  parseShape,
  shellCommands,
  textPattern,
  type Block,
  type Command,
} from './markdown.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
/** What a clone holds that the examples need (the working tree's, so uncommitted edits count). */
const TREE = [
  'package.json',
  'package-lock.json',
  'README.md',
  'LICENSE',
  'scripts',
  'src',
  'docs',
  'tsconfig.json',
  'tsconfig.build.json',
  'firestore.indexes.json',
];
const TSX = import.meta.resolve('tsx');
const MARKDOWN = new URL('./markdown.ts', import.meta.url).href;
/** A bound for a hung step, not a speed check (a CLI spawn once took 30 s at load 20). */
const STEP_TIMEOUT_MS = 120_000;
/** The same for a full build of the tree (tsc over src/ took over 120 s at load 44). */
const BUILD_TIMEOUT_MS = 360_000;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(
  file: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      {
        cwd: options.cwd,
        env: options.env,
        timeout: options.timeoutMs ?? STEP_TIMEOUT_MS,
        maxBuffer: 16 << 20,
        encoding: 'utf8',
      },
      (error, stdout, stderr) => {
        const code = error
          ? typeof (error as { code?: unknown }).code === 'number'
            ? (error as { code: number }).code
            : null
          : 0;
        const killed = error?.killed
          ? ` (killed by ${error.signal} after ${options.timeoutMs ?? STEP_TIMEOUT_MS} ms)`
          : '';
        resolve({ code, stdout, stderr: stderr + (error && code === null ? `\n${error.message}${killed}` : '') });
      },
    );
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Ends `npm start`'s whole process group (npm, sh, node), SIGKILL after 15 s. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    process.kill(-child.pid!, 'SIGTERM');
  } catch {
    return;
  }
  const timer = setTimeout(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }, 15_000);
  await exited;
  clearTimeout(timer);
}

describe('README.md, run as a newcomer would', { timeout: 900_000 }, () => {
  let tmp: string;
  let clone: string;
  let app: string;
  let env: NodeJS.ProcessEnv;
  let port: number;
  let server: ChildProcess | undefined;
  let serverLog = '';
  let apiKey = '';
  /** Every output so far, newest last: placeholders are filled from them. */
  const outputs: string[] = [];
  const ran: string[] = [];
  const notRun: string[] = [];

  before(async () => {
    tmp = realpathSync(mkdtempSync(join(tmpdir(), 'dibs-readme-')));
    clone = join(tmp, 'dibs');
    app = join(tmp, 'app');
    for (const entry of TREE) cpSync(join(ROOT, entry), join(clone, entry), { recursive: true });
    symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(clone, 'node_modules'));
    mkdirSync(join(app, 'node_modules'), { recursive: true });
    symlinkSync(clone, join(app, 'node_modules', 'dibs'));
    // what `npm init` + `npm install ../dibs` leave, in an ES module project (the examples use top-level await)
    writeFileSync(
      join(app, 'package.json'),
      JSON.stringify({ name: 'app', type: 'module', dependencies: { dibs: 'file:../dibs' } }, null, 2),
    );
    // `npx dibs …` execs the bin target itself, as npx does once it has linked the bin.
    const shims = join(tmp, 'bin');
    mkdirSync(shims);
    const bin = (JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8')) as { bin: { dibs: string } }).bin.dibs;
    writeFileSync(
      join(shims, 'npx'),
      `#!/bin/sh\nif [ "$1" = dibs ]; then shift; exec "${join(clone, bin)}" "$@"; fi\necho "npx $1: not simulated by the README test" >&2\nexit 127\n`,
      { mode: 0o755 },
    );
    port = await freePort();
    env = {
      PATH: `${shims}:${dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      HOME: tmp,
      PORT: String(port),
      LANG: 'C.UTF-8',
      NO_COLOR: '1',
    };
    for (const name of ['TMPDIR', 'CI']) if (process.env[name]) env[name] = process.env[name];
    // npm itself (npm start, the real npx): offline, a private cache, no notices.
    Object.assign(env, {
      npm_config_cache: join(tmp, 'npm-cache'),
      npm_config_offline: 'true',
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
      npm_config_audit: 'false',
    });
  });

  after(async () => {
    if (server) await stop(server);
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const npm = (args: string[], cwd = clone, timeoutMs?: number) => run('npm', args, { cwd, env, timeoutMs });
  /** The real npx (not the shim): the PATH without the shim directory. */
  const realNpx = (args: string[]) =>
    run('npx', args, { cwd: clone, env: { ...env, PATH: env.PATH!.split(':').slice(1).join(':') } });

  async function npmInstall(): Promise<void> {
    const build = await npm(['run', 'prepare'], clone, BUILD_TIMEOUT_MS);
    assert.equal(build.code, 0, `npm run prepare (the build npm install runs): ${build.stderr}`);
    // A user's first `npx dibs` links the bin (and sets its execute bit) once, in npx's cache.
    const first = await realNpx(['--offline', 'dibs', '--version']);
    assert.equal(first.code, 0, `first npx dibs --version: ${first.stderr}`);
  }

  async function npmTest(): Promise<void> {
    const build = await npm(['run', 'build'], clone, BUILD_TIMEOUT_MS);
    assert.equal(build.code, 0, `the rebuild npm test starts with: ${build.stderr}`);
    const again = await realNpx(['--offline', 'dibs', '--version']);
    assert.equal(
      again.code,
      0,
      `npx dibs --version after npm test rebuilt dist/ (exit ${again.code}): ${again.stderr.trim()}`,
    );
  }

  async function npmStart(): Promise<void> {
    const child = spawn('npm', ['start'], { cwd: clone, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    server = child;
    child.stdout!.on('data', (d) => (serverLog += d));
    child.stderr!.on('data', (d) => (serverLog += d));
    const deadline = Date.now() + STEP_TIMEOUT_MS;
    for (;;) {
      assert.ok(child.exitCode === null, `npm start exited ${child.exitCode}: ${serverLog}`);
      const key = /\b(dibs_[0-9a-f]{16}_[A-Za-z0-9_-]+)/.exec(serverLog);
      const ready = key
        ? await fetch(`http://127.0.0.1:${port}/healthz`).then(
            (r) => r.ok,
            () => false,
          )
        : false;
      if (key && ready) {
        apiKey = key[1]!;
        return;
      }
      assert.ok(
        Date.now() < deadline,
        `npm start: no key printed or /healthz not answering within ${STEP_TIMEOUT_MS} ms: ${serverLog}`,
      );
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  /** `<code>`, `<sale>`, `<id>`: the latest earlier output that shows one. */
  function fill(text: string, where: string): string {
    const sources: Record<string, RegExp> = {
      '<code>': /^claimed: ([A-Z0-9]+-[A-Z0-9]+)$/m,
      '<sale>': /^sale\s+(sale_[0-9a-f]+)$/m,
      '<id>': /^id\s+([0-9a-f]{16})$/m,
    };
    return text.replace(/<(code|sale|id)>/g, (placeholder) => {
      const found = outputs
        .map((o) => sources[placeholder]!.exec(o)?.[1])
        .filter(Boolean)
        .at(-1);
      assert.ok(found, `${where}: no earlier output shows ${placeholder}`);
      return found!;
    });
  }

  function checkExpected(command: Command, out: Run, where: string): void {
    for (const raw of command.expect) {
      const expected = raw.replace(/^\d{3} /, ''); // `201 {…}`: curl -s does not print the status
      if (expected.startsWith('{') || expected.startsWith('[')) {
        let actual: unknown;
        try {
          actual = JSON.parse(out.stdout.trim());
        } catch {
          assert.fail(`${where}: expected JSON like ${expected}, got: ${out.stdout.slice(0, 500)}`);
        }
        try {
          matchJsonShape(actual, parseShape(expected));
        } catch (error) {
          assert.fail(
            `${where}: expected ${expected}, got ${out.stdout.trim().slice(0, 500)} (${(error as Error).message.split('\n')[0]})`,
          );
        }
      } else if (expected.startsWith('CSV: ')) {
        assert.equal(out.stdout.split('\n')[0]!.trim(), expected.slice(5), `${where}: the CSV header`);
      } else {
        assert.match(out.stdout + out.stderr, textPattern(expected), `${where}: expected ${expected}`);
      }
    }
  }

  async function runShell(block: Block, cwd: string): Promise<void> {
    const state: string[] = []; // assignments carried to the later commands of the block, as one shell session would
    for (const command of shellCommands(block.body, block.line)) {
      const where = `README.md:${command.line} \`${command.text.split('\n')[0]}\``;
      if (NOT_RUN.test(command.comment)) {
        notRun.push(where);
        continue;
      }
      if (command.text === 'npm install') await npmInstall();
      else if (command.text === 'npm start') await npmStart();
      else if (command.text === 'npm test') await npmTest();
      else {
        assert.ok(!/^npm /.test(command.text), `${where}: an npm command the test does not simulate`);
        let text = fill(command.text, where).replace(/localhost:3000/g, `localhost:${port}`);
        if (/^export DIBS_KEY=dibs_…/.test(text)) text = `export DIBS_KEY=${apiKey}`;
        const out = await run('sh', ['-c', [...state, text].join('\n')], { cwd, env });
        outputs.push(out.stdout + out.stderr);
        assert.equal(out.code, 0, `${where} exited ${out.code}:\n${out.stdout}\n${out.stderr}`);
        checkExpected(command, out, where);
        if (/^(export\s+)?[A-Za-z_]\w*=/.test(text) && !text.includes('\n')) state.push(text);
      }
      ran.push(where);
    }
  }

  /**
   * A ```ts block as a module. One that uses `dibs` without opening it goes on with a `dibs` opened
   * the same way (the README says so). `// → shape` comments are checked on the value of the line.
   */
  async function runTs(block: Block, cwd: string): Promise<void> {
    const where = `README.md:${block.line} (ts)`;
    const lines = block.body.split('\n').map((line, i) => {
      const m = /^(.*?;)\s*\/\/\s*→\s*(.*)$/.exec(line);
      const shape = m ? leadingShape(m[2]!.trim()) : undefined;
      if (!m || !shape) return line;
      const at = JSON.stringify(`README.md:${block.line + i + 1}`);
      const check = (value: string) => `__check(${value}, ${JSON.stringify(shape)}, ${at});`;
      const statement = m[1]!;
      const declared = /^\s*(?:const|let)\s+(\w+)\s*=/.exec(statement);
      if (declared) return `${statement} ${check(declared[1]!)}`;
      const logged = /^\s*console\.log\((.*)\);$/.exec(statement);
      if (logged) return `${statement} ${check(logged[1]!)}`;
      return check(statement.replace(/;$/, ''));
    });
    const opens = /openDibs\(/.test(block.body);
    const source = [
      `import { parseShape as __parse, matchJsonShape as __match } from ${JSON.stringify(MARKDOWN)};`,
      // biome-ignore lint/suspicious/noTemplateCurlyInString: generated TypeScript source that contains a template literal
      'const __check = (value: unknown, shape: string, at: string) => { try { __match(JSON.parse(JSON.stringify(value)), __parse(shape)); } catch (error) { throw new Error(`${at}: ${(error as Error).message}`); } };',
      ...(opens
        ? []
        : ["import { openDibs, isDibsError } from 'dibs';", "const dibs = await openDibs('sqlite:./dibs.db');"]),
      ...lines,
      ...(opens ? [] : ['await dibs.close();']),
    ].join('\n');
    const file = join(cwd, `readme-${block.line}.ts`);
    writeFileSync(file, source);
    const out = await run(process.execPath, ['--import', TSX, file], { cwd, env });
    outputs.push(out.stdout + out.stderr);
    assert.equal(out.code, 0, `${where} exited ${out.code}:\n${out.stdout}\n${out.stderr}`);
    ran.push(where);
  }

  it('runs every example of README.md in order, each with its documented output', async () => {
    for (const block of codeBlocks(README)) {
      if (/prints something like/.test(block.before)) {
        assert.ok(apiKey, `README.md:${block.line}: the banner block comes after npm start`);
        for (const line of block.body
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean)) {
          if (line.startsWith('dibs_'))
            assert.match(serverLog, /\bdibs_[0-9a-f]{16}_[A-Za-z0-9_-]{20,}/, 'the banner shows the key');
          else assert.match(serverLog, textPattern(line), `README.md:${block.line}: the banner`);
        }
        continue;
      }
      if (block.lang !== 'sh' && block.lang !== 'ts') continue;
      if (BLOCK_NOT_RUN.test(block.before)) {
        notRun.push(`README.md:${block.line}`);
        continue;
      }
      const cwd = block.headings[0] === 'Library' ? app : clone;
      if (block.lang === 'sh') await runShell(block, cwd);
      else await runTs(block, cwd);
    }
    assert.equal(
      server?.exitCode ?? null,
      null,
      `npm start's server died while the examples ran: ${serverLog.slice(-3000)}`,
    );
    assert.ok(ran.length >= 40, `only ${ran.length} examples ran: ${ran.join(', ')}`);
    assert.ok(notRun.length <= 6, `more examples are marked not run than expected: ${notRun.join(', ')}`);
  });

  it('every `dibs …` command of README.md and docs/*.md names only flags its --help shows', async () => {
    assert.ok(apiKey, 'the examples ran first');
    const texts = [
      README,
      ...readdirSync(join(ROOT, 'docs'))
        .filter((f) => f.endsWith('.md'))
        .map((f) => readFileSync(join(ROOT, 'docs', f), 'utf8')),
    ];
    const commands = new Set<string>();
    for (const text of texts) {
      for (const block of codeBlocks(text).filter((b) => b.lang === 'sh' || b.lang === 'console')) {
        for (const line of block.body.split('\n')) {
          const m = /(?:^|\s|\$ )(?:npx )?dibs ([^#|;&]*)/.exec(line.replace(/^\s*#.*$/, ''));
          if (m) commands.add(m[1]!.trim());
        }
      }
      for (const m of text.matchAll(/`(?:npx )?dibs ([^`]+)`/g)) commands.add(m[1]!.trim());
    }
    const help = new Map<string, Promise<Run>>();
    const helpOf = (words: string[]) => {
      const key = words.join(' ');
      if (!help.has(key))
        help.set(key, run(join(clone, 'dist/cli/main.js'), [...words, '--help'], { cwd: clone, env }));
      return help.get(key)!;
    };
    const root = await helpOf([]);
    assert.equal(root.code, 0, root.stderr);
    const problems: string[] = [];
    const parsed = [...commands].map((command) => {
      const tokens = command.split(/\s+/).filter(Boolean);
      const firstFlag = tokens.findIndex((t) => t.startsWith('-'));
      const positional = firstFlag < 0 ? tokens : tokens.slice(0, firstFlag); // command words (and its arguments: harmless before --help)
      return { command, tokens, variants: expandAlternatives(positional) };
    });
    // Three --help runs at a time: each is a Node start-up, and the machine has few cores.
    const queue = parsed.flatMap((p) => p.variants);
    await Promise.all(
      [0, 1, 2].map(async () => {
        for (let words = queue.shift(); words; words = queue.shift()) await helpOf(words);
      }),
    );
    for (const { command, tokens, variants } of parsed) {
      for (const expanded of variants) {
        const out = await helpOf(expanded);
        if (out.code !== 0) {
          problems.push(`dibs ${expanded.join(' ')} --help exited ${out.code}: ${out.stderr.trim().split('\n')[0]}`);
          continue;
        }
        for (const flag of tokens.filter((t) => /^--[a-z]/.test(t)).map((t) => t.split('=')[0]!)) {
          if (!new RegExp(`(^|[\\s,])${flag}\\b`, 'm').test(out.stdout + root.stdout))
            problems.push(`dibs ${command}: ${flag} is not in \`dibs ${expanded.join(' ')} --help\``);
        }
      }
    }
    assert.ok(commands.size >= 30, `only ${commands.size} dibs commands found`);
    assert.deepEqual(problems, []);
  });

  it("every route of the README's HTTP table is in /openapi.json, and /docs serves the reference page", async () => {
    assert.ok(apiKey, 'the examples ran first');
    const doc = (await (await fetch(`http://127.0.0.1:${port}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([path, ops]) =>
        Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.replace(/\{\w+\}/g, '{}')}`),
      ),
    );
    const section = README.slice(
      README.indexOf('## HTTP API'),
      README.indexOf('\n## ', README.indexOf('## HTTP API') + 5),
    );
    const routes: string[] = [];
    for (const row of section.split('\n').filter((l) => l.startsWith('| `'))) {
      let previous = '';
      for (const span of row.split(' | ')[0]!.matchAll(/`([A-Z/]+) ([^`]+)`/g)) {
        let path = span[2]!.replace(/\\\|/g, '|').replace(/\?.*$/, '');
        if (path.startsWith('…/')) {
          const first = path.slice(2).split('/')[0]!;
          const at = previous.lastIndexOf(`/${first.split('|')[0]}`);
          path = (at >= 0 ? previous.slice(0, at) : previous) + path.slice(1);
        }
        previous = path.split('|')[0]!.replace(/\/[^/]*$/, (last) => last);
        for (const method of span[1]!.split('/')) for (const p of expandPath(path)) routes.push(`${method} ${p}`);
      }
    }
    assert.ok(routes.length >= 50, `only ${routes.length} routes read from the README's table`);
    const missing = routes.filter((r) => r !== 'GET /docs' && !documented.has(r.replace(/:\w+/g, '{}')));
    assert.deepEqual(missing, [], 'routes the README names that /openapi.json does not document');
    const page = await fetch(`http://127.0.0.1:${port}/docs`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    assert.match(await page.text(), /\/openapi\.json/, 'the reference page renders /openapi.json');
  });
});

/** `room join|ticket|reserve` → three commands. */
function expandAlternatives(words: string[]): string[][] {
  return words.reduce<string[][]>(
    (acc, word) => acc.flatMap((prefix) => word.split('|').map((w) => [...prefix, w])),
    [[]],
  );
}

/** `/v1/locks/:key/acquire|renew|release` → three paths. */
function expandPath(path: string): string[] {
  const at = path.lastIndexOf('/');
  return path
    .slice(at + 1)
    .split('|')
    .map((last) => path.slice(0, at + 1) + last);
}
