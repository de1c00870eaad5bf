#!/usr/bin/env bash
# scripts/driver-spec-tests.sh [DRIVER_DIR] : the Node.js driver's own `transactions` unified spec
# tests, run by the driver's own harness against an emulated replica set; prints the pass rate.
#
# A manual conformance run, not part of CI: it needs a checkout of mongodb/node-mongodb-native
# (the ref closest to the project's driver; 6.x for driver 6.22) with its dev dependencies
# installed (`npm install --ignore-scripts` there: the scripts only build optional native
# add-ons). Nothing is downloaded by this script.
#
#   DRIVER_DIR       the driver checkout (or the first argument)
#   SPEC_TEST_FILE   the mocha file to run, relative to DRIVER_DIR
#                    (default test/integration/transactions/transactions.spec.test.ts)
#   MIN_PASS_RATE    exit 0 only if passed / (passed + failed) is at least this percentage (95)
#   USE_DIST=1       start the emulator from dist/ (after `npm run build`) instead of compiling
#                    the sources into a temporary directory (which leaves dist/ alone)
#   KEEP_REPORT=path also write mocha's JSON report there
#
# The emulator is started with the project's CLI (`--topology replset`); its URI goes to the
# harness as MONGODB_URI. Tests the harness skips (runOnRequirements: sharded/load-balanced
# topologies, server versions, the driver's own skip list) are reported as skipped and do not
# count towards the rate.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

driver_dir="${1:-${DRIVER_DIR:-}}"
if [ -z "$driver_dir" ]; then
  echo "usage: $0 <node-mongodb-native checkout> (or DRIVER_DIR=...)" >&2
  exit 2
fi
driver_dir="$(cd "$driver_dir" && pwd)"
spec_file="${SPEC_TEST_FILE:-test/integration/transactions/transactions.spec.test.ts}"
min_rate="${MIN_PASS_RATE:-95}"
if [ ! -f "$driver_dir/$spec_file" ]; then
  echo "no $spec_file in $driver_dir" >&2
  exit 2
fi
if [ ! -x "$driver_dir/node_modules/.bin/mocha" ]; then
  echo "the driver's dev dependencies are missing: run 'npm install --ignore-scripts' in $driver_dir" >&2
  exit 2
fi

work="$(mktemp -d)"
emulator_pid=''
cleanup() {
  if [ -n "$emulator_pid" ]; then kill "$emulator_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

# 1. The emulator's CLI.
if [ "${USE_DIST:-}" = 1 ]; then
  cli="$repo/dist/libs/mongo-emulator/src/cli.js"
  [ -f "$cli" ] || { echo "no $cli: run 'npm run build' first" >&2; exit 2; }
else
  echo "compiling the sources into $work/build ..." >&2
  (cd "$repo" && npx tsc -p tsconfig.build.json --outDir "$work/build" --sourceMap false)
  cli="$work/build/libs/mongo-emulator/src/cli.js"
fi

# 2. An emulated replica set; its one output line is {"uri": ...}.
NODE_PATH="$repo/node_modules" node "$cli" --topology replset >"$work/emulator.out" 2>"$work/emulator.err" &
emulator_pid=$!
for _ in $(seq 1 100); do
  [ -s "$work/emulator.out" ] && break
  kill -0 "$emulator_pid" 2>/dev/null || { cat "$work/emulator.err" >&2; exit 1; }
  sleep 0.1
done
uri="$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).uri)' "$work/emulator.out")"
echo "emulator: $uri" >&2

# 3. The driver's harness (its .mocharc for integration tests), JSON report to a file.
set +e
(cd "$driver_dir" && MONGODB_URI="$uri" ./node_modules/.bin/mocha --config test/mocha_mongodb.js \
  --reporter json --reporter-option "output=$work/report.json" "$spec_file") >"$work/mocha.log" 2>&1
mocha_rc=$?
set -e
if [ ! -s "$work/report.json" ]; then
  echo "mocha produced no report (exit $mocha_rc):" >&2
  tail -40 "$work/mocha.log" >&2
  exit 1
fi
[ -n "${KEEP_REPORT:-}" ] && cp "$work/report.json" "$KEEP_REPORT"

# 4. The figures.
node - "$work/report.json" "$min_rate" "$spec_file" <<'NODE'
const [report, minRate, specFile] = process.argv.slice(2);
const r = JSON.parse(require('fs').readFileSync(report, 'utf8'));
const passed = r.passes.length;
const failed = r.failures.length;
const skipped = r.pending.length;
const ran = passed + failed;
const rate = ran ? (100 * passed) / ran : 0;
// Skipped tests by spec file (the unified runner names them "<suite> <file> <test>").
const byFile = {};
for (const t of r.pending) {
  const file = t.fullTitle.replace(/^.*?Unified Tests /, '').split(' ')[0];
  byFile[file] = (byFile[file] || 0) + 1;
}
console.log(`driver spec tests: ${specFile}`);
console.log(`ran ${ran}, passed ${passed}, failed ${failed}, skipped ${skipped}`);
console.log(`pass rate ${rate.toFixed(1)} % of the tests that ran (minimum ${minRate} %)`);
if (skipped) {
  console.log('skipped by file: ' + Object.entries(byFile).map(([f, n]) => `${f} ${n}`).join(', '));
}
for (const f of r.failures) {
  const msg = String((f.err && f.err.message) || '').split('\n')[0].slice(0, 200);
  console.log(`FAILED ${f.fullTitle}\n       ${msg}`);
}
process.exit(rate >= Number(minRate) ? 0 : 1);
NODE
