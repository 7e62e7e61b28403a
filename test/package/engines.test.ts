/**
 * `npm ci` warns (EBADENGINE) when a package of the lockfile does not declare the running Node
 * among its engines. dibs declares `engines.node` in package.json; every package of the lockfile
 * (dev ones too: `npm ci` installs them) must accept the lowest version of each major line that
 * range admits, so no user on a declared version sees the warning. The machine running the suite
 * has one Node; this checks the whole declared range (scripts/node-compat.sh runs the code on others).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import semver from 'semver';

const root = new URL('../../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
};

/**
 * The Node lines users run now. 24 and 26 are not declared (yet): better-sqlite3 12, the last line
 * that supports Node 20, aborts the process on them (a Statement finalized with no current
 * environment; scripts/node-compat.sh 24 shows it), and better-sqlite3 13 needs Node >= 22.
 */
const MAJORS = [20, 22, 24, 26];

describe('engines: the declared Node range and the lockfile agree', () => {
  const declared = pkg.engines.node;

  it('declares Node 20.19+ and 22, and no end-of-life line below 20.19', () => {
    assert.ok(semver.satisfies('20.19.0', declared), declared);
    assert.ok(semver.satisfies('22.12.0', declared), declared);
    assert.ok(!semver.satisfies('18.20.0', declared), declared);
    assert.ok(!semver.satisfies('21.7.0', declared), `${declared}: 21 is an odd, end-of-life line`);
  });

  it('every package of the lockfile accepts each declared major at its lowest admitted version', () => {
    const probes = MAJORS.map((major) => {
      const sub = semver.validRange(`>=${major}.0.0 <${major + 1}.0.0`)!;
      return semver.intersects(declared, sub)
        ? semver.minVersion(
            `${declared
              .split('||')
              .map((r) => r.trim())
              .find((r) => semver.intersects(r, sub))} ${sub}`,
          )?.version
        : undefined;
    }).filter((v): v is string => v !== undefined);
    assert.ok(probes.length >= 2, `probed only ${probes.join(', ')}`);
    const refused: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      const range = !Array.isArray(entry.engines) ? entry.engines?.node : undefined;
      if (!path || !range) continue;
      for (const version of probes) {
        if (!semver.satisfies(version, range))
          refused.push(
            `${path.replace(/^.*node_modules\//, '')}@${entry.version} wants node ${range}, refuses ${version}`,
          );
      }
    }
    assert.deepEqual(refused, [], `packages npm ci would warn about (EBADENGINE) on the declared range ${declared}`);
  });
});
