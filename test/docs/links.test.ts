/**
 * Every relative link of the project's Markdown (README.md, CONTRIBUTING.md, docs/*.md) reaches a
 * file of the tree, and every `#anchor` a heading of the file it names, by GitHub's rule for heading
 * anchors: a reader who follows one lands where the text says. Links to the web are not fetched.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The Markdown text outside fenced blocks, line for line (a block's lines are left empty). */
function withoutFences(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```\s*$/gm, (block) => block.replace(/[^\n]/g, ''));
}

/** The same without inline code either: a link shown as code is not a link. */
const prose = (markdown: string) => withoutFences(markdown).replace(/`[^`\n]*`/g, '');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  // inline code in a heading counts by its text (its backticks are punctuation)
  for (const line of withoutFences(markdown).split('\n')) {
    const heading = /^#{1,6} (.+?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const text = heading[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // a link in a heading counts by its text
      .replace(/<[^>]+>/g, '');
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** `[text](target)` links of a Markdown file's prose: the target and its line. */
export function linksOf(markdown: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = [];
  prose(markdown)
    .split('\n')
    .forEach((text, i) => {
      for (const match of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g))
        links.push({ target: match[1]!, line: i + 1 });
    });
  return links;
}

const FILES = [
  'README.md',
  'CONTRIBUTING.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** Every broken relative link of the given files, as `file:line → target (why)`. */
function brokenLinks(files: string[]): string[] {
  const broken: string[] = [];
  const anchors = new Map<string, Set<string>>();
  const anchorsIn = (path: string) =>
    anchors.get(path) ?? anchors.set(path, anchorsOf(readFileSync(path, 'utf8'))).get(path)!;
  for (const file of files) {
    const path = join(ROOT, file);
    for (const { target, line } of linksOf(readFileSync(path, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      const [where = '', anchor] = target.split('#');
      const into = where === '' ? path : join(dirname(path), decodeURIComponent(where));
      const at = `${file}:${line} → ${target}`;
      if (!existsSync(into)) {
        broken.push(`${at} (no such file: ${relative(ROOT, into)})`);
        continue;
      }
      if (anchor === undefined || statSync(into).isDirectory()) continue;
      if (!into.endsWith('.md')) continue; // a line anchor into source (#L10) is GitHub's, not a heading
      if (!anchorsIn(into).has(anchor.toLowerCase()))
        broken.push(`${at} (no heading with that anchor in ${relative(ROOT, into)})`);
    }
  }
  return broken;
}

describe('links in the Markdown docs', () => {
  it('every relative link reaches a file, and every anchor a heading of it', () => {
    const links = FILES.flatMap((f) => linksOf(readFileSync(join(ROOT, f), 'utf8')));
    assert.ok(links.length >= 20, `only ${links.length} links found: the link reader is broken`);
    assert.deepEqual(brokenLinks(FILES), []);
  });

  it('the anchor rule is GitHub’s (punctuation dropped, code by its text, spaces to dashes, repeats numbered)', () => {
    const anchors = anchorsOf(
      '# dibs\n## One model of the rules: model-based tests\n## Flash sales\n## Flash sales\n```\n## not a heading\n```\n## Summary (`npm run bench -- summary`)\n',
    );
    assert.deepEqual(
      [...anchors],
      [
        'dibs',
        'one-model-of-the-rules-model-based-tests',
        'flash-sales',
        'flash-sales-1',
        'summary-npm-run-bench----summary',
      ],
    );
  });
});
