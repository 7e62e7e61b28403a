// The few functions of semver (a dev dependency, shipped without types) the engines test uses.
declare module 'semver' {
  interface SemVer {
    version: string;
  }
  const semver: {
    satisfies(version: string, range: string): boolean;
    intersects(a: string, b: string): boolean;
    minVersion(range: string): SemVer | null;
    validRange(range: string): string | null;
    major(version: string): number;
  };
  export default semver;
}
