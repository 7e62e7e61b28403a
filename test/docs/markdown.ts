/**
 * Reading a Markdown file the way the README test runs it: its fenced code blocks with the
 * headings above them, the shell commands of a block (continuation lines and here-documents
 * joined) with their expected outputs (`# → …` / `// → …`), the visible "not run" markers, and a
 * loose matcher for the documented output shapes.
 */
import assert from 'node:assert/strict';

/** The visible marker of an example the test cannot run: on a command's line, or just above a block. */
export const NOT_RUN = /\(not run by the README test: [^)]+\)/;
export const BLOCK_NOT_RUN = /^\*Not run by the README test: .+\*$/;

export interface Block {
  lang: string;
  body: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The `##`/`###` headings above it, outermost first. */
  headings: string[];
  /** The last non-empty line before the fence (a visible marker goes there). */
  before: string;
}

export function codeBlocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const blocks: Block[] = [];
  const headings: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const heading = /^(#{2,4}) (.+)$/.exec(lines[i]!);
    if (heading) {
      headings.length = heading[1]!.length - 2;
      headings.push(heading[2]!);
      continue;
    }
    const fence = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!fence) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    let b = start - 1;
    while (b >= 0 && lines[b]!.trim() === '') b--;
    blocks.push({
      lang: fence[1]!,
      body: body.join('\n'),
      line: start + 1,
      headings: [...headings],
      before: b >= 0 ? lines[b]!.trim() : '',
    });
  }
  return blocks;
}

export interface Command {
  /** The command as the shell gets it (continuations and here-documents included, trailing comment removed). */
  text: string;
  /** Its trailing comment, if any. */
  comment: string;
  /** `→ …` expectations: from its trailing comment or from `# → …` lines after it. */
  expect: string[];
  line: number;
}

/** Splits a shell block into commands; comment-only lines are dropped, `# → …` lines attach to the command above. */
export function shellCommands(body: string, firstLine: number): Command[] {
  const lines = body.split('\n');
  const commands: Command[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trim() === '') continue;
    const arrow = /^\s*#\s*→\s*(.*)$/.exec(line);
    if (arrow) {
      assert.ok(commands.length, `line ${firstLine + i + 1}: an expected output before any command`);
      commands.at(-1)!.expect.push(expectation(arrow[1]!));
      continue;
    }
    if (/^\s*#/.test(line)) continue;
    const lineNo = firstLine + i + 1;
    let text = line;
    while (text.endsWith('\\') && i + 1 < lines.length) text = `${text}\n${lines[++i]}`;
    const heredoc = /<<-?\s*'?(\w+)'?/.exec(text);
    if (heredoc) while (i + 1 < lines.length && lines[i] !== heredoc[1]) text = `${text}\n${lines[++i]}`;
    const split = splitComment(text);
    commands.push({
      text: split.code,
      comment: split.comment,
      expect: /^→/.test(split.comment) ? [expectation(split.comment.slice(1))] : [],
      line: lineNo,
    });
  }
  return commands;
}

/** `→ X — commentary`: the part before an em dash is what is checked. */
function expectation(text: string): string {
  return text.split(' — ')[0]!.trim();
}

/** Cuts a trailing `# comment` off the last line of a command (not inside quotes, not a here-document body). */
function splitComment(text: string): { code: string; comment: string } {
  const lines = text.split('\n');
  const first = lines[0]!;
  let quote = '';
  for (let i = 0; i < first.length; i++) {
    const c = first[i]!;
    if (quote) {
      if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '#' && /\s/.test(first[i - 1] ?? ' ')) {
      return { code: [first.slice(0, i).trimEnd(), ...lines.slice(1)].join('\n'), comment: first.slice(i + 1).trim() };
    }
  }
  return { code: text, comment: '' };
}

/** A regular expression for an expected line of text: `…` is anything, a duration `0.0 s` any duration, an example code any code. */
export function textPattern(expected: string): RegExp {
  const escaped = expected.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(
    escaped
      .replace(/…/g, '.*')
      .replace(/\\\.\\\.\\\./g, '.*')
      .replace(/\b\d+\\\.\d+ s\b/g, '\\d+\\.\\d+ s')
      .replace(/\b[A-Z]+-\d{4}\b/g, '[A-Z0-9]+-[A-Z0-9]+'),
  );
}

/** Example codes in the README (`SPRING-0002`): which one a claim takes is the store's choice. */
const EXAMPLE_CODE = /^[A-Z]+-\d{4}$/;

/**
 * `actual` has the documented shape `expected`: JSON with `…` for "and more" — every key shown is
 * there, with the value shown (an example code stands for any code; a nested object is checked
 * the same way).
 */
export function matchJsonShape(actual: unknown, expected: unknown, path = '$'): void {
  if (typeof expected === 'string' && EXAMPLE_CODE.test(expected)) {
    assert.match(String(actual), /^[A-Z0-9]+-[A-Z0-9]+$/, `${path}: a code like ${expected}`);
    return;
  }
  if (expected === null || typeof expected !== 'object') {
    assert.deepEqual(actual, expected, path);
    return;
  }
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${path}: an array, got ${JSON.stringify(actual)}`);
    if (expected.length === 0) assert.deepEqual(actual, [], path);
    expected.forEach((e, i) => matchJsonShape(actual[i], e, `${path}[${i}]`));
    return;
  }
  assert.ok(
    actual !== null && typeof actual === 'object' && !Array.isArray(actual),
    `${path}: an object, got ${JSON.stringify(actual)}`,
  );
  for (const [key, value] of Object.entries(expected)) {
    assert.ok(key in (actual as object), `${path}.${key}: missing from ${JSON.stringify(actual)}`);
    if (value !== SOME) matchJsonShape((actual as Record<string, unknown>)[key], value, `${path}.${key}`);
  }
}

const SOME = '…some';

/** Parses a documented JSON shape: `{"a":1,…}` (JSON with `…`) or `{ a, b: true, c: 'x', … }` (a JavaScript-ish sketch). */
export function parseShape(text: string): unknown {
  const shape = text.trim();
  try {
    return JSON.parse(shape.replace(/,\s*…/g, '').replace(/…/g, `"${SOME}"`));
  } catch {
    // a sketch: keys, optionally with a literal value; nested braces only say the key is there
  }
  if (shape === '[]') return [];
  const inner = /^\{(.*)\}$/s.exec(shape);
  assert.ok(inner, `not a shape: ${shape}`);
  const out: Record<string, unknown> = {};
  let depth = 0;
  let part = '';
  const parts: string[] = [];
  for (const c of inner[1]!) {
    if (c === '{' || c === '[') depth++;
    if (c === '}' || c === ']') depth--;
    if (c === ',' && depth === 0) {
      parts.push(part);
      part = '';
    } else part += c;
  }
  parts.push(part);
  for (const p of parts.map((x) => x.trim()).filter((x) => x && x !== '…')) {
    const [key, ...rest] = p.split(':');
    const value = rest.join(':').trim();
    out[key!.trim()] =
      value === '' || value.startsWith('{') || value.startsWith('[')
        ? SOME
        : JSON.parse(value.replace(/^'(.*)'$/, '"$1"'));
  }
  return out;
}

/** The leading `{…}` / `[…]` of a comment (`{ valid: true, code } — changes nothing` → `{ valid: true, code }`). */
export function leadingShape(comment: string): string | undefined {
  const open = comment[0];
  if (open !== '{' && open !== '[') return undefined;
  const close = open === '{' ? '}' : ']';
  let depth = 0;
  for (let i = 0; i < comment.length; i++) {
    if (comment[i] === open) depth++;
    if (comment[i] === close && --depth === 0) return comment.slice(0, i + 1);
  }
  return undefined;
}
