/**
 * Keeps of a Lua fragment (lib.lua, sale_lib.lua, …) only the `local function`s a script uses.
 * Redis runs a script's whole chunk on every call, so each function of a fragment is a closure made
 * again on every call: a claim paid ~1 µs of its ~20 µs of server CPU for the 13 of lib.lua's 21
 * helpers it never calls. A function is kept when its name occurs as a word in the script, or in a
 * kept function (a name only mentioned in a comment keeps it too: harmless). Everything that is
 * not a top-level `local function` (the header, `local T = ARGV[1]`) is always kept, in order.
 *
 * Shape the fragments follow (checked here, so a fragment that breaks it fails loudly at load): a
 * function starts at a line `local function name(` — with the comment lines right above it — and
 * ends at the next line that is exactly `end`, or on its own line when that line ends in ` end`.
 */

interface Unit {
  /** Set for a top-level local function; undefined for text kept as is. */
  name?: string;
  text: string;
}

const FUNCTION_START = /^local function ([A-Za-z_][A-Za-z0-9_]*)\s*\(/;

function units(source: string, file: string): Unit[] {
  const lines = source.split('\n');
  const out: Unit[] = [];
  let loose: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const match = FUNCTION_START.exec(lines[i]!);
    if (!match) {
      loose.push(lines[i]!);
      i++;
      continue;
    }
    // the comment lines right above the function belong to it
    let first = loose.length;
    while (first > 0 && loose[first - 1]!.startsWith('--')) first--;
    const comments = loose.slice(first);
    if (first > 0) out.push({ text: loose.slice(0, first).join('\n') });
    loose = [];
    let last = i;
    if (!/\send$/.test(lines[i]!)) {
      while (last < lines.length && lines[last] !== 'end') last++;
      if (last === lines.length) throw new Error(`${file}: function ${match[1]} has no closing 'end' line`);
    }
    out.push({ name: match[1]!, text: [...comments, ...lines.slice(i, last + 1)].join('\n') });
    i = last + 1;
  }
  if (loose.length > 0) out.push({ text: loose.join('\n') });
  return out;
}

const mentions = (text: string, name: string) => new RegExp(`\\b${name}\\b`).test(text);

/** `fragment` without the top-level functions that neither `user` nor a kept function calls. */
export function usedParts(fragment: string, user: string, file: string): string {
  const all = units(fragment, file);
  const kept = new Set<Unit>(all.filter((u) => u.name === undefined));
  let reach = [user, ...[...kept].map((u) => u.text)].join('\n');
  for (let grew = true; grew; ) {
    grew = false;
    for (const unit of all) {
      if (kept.has(unit) || !mentions(reach, unit.name!)) continue;
      kept.add(unit);
      reach += `\n${unit.text}`;
      grew = true;
    }
  }
  return all
    .filter((u) => kept.has(u))
    .map((u) => u.text)
    .join('\n');
}
